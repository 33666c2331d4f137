import EditLog
import Foundation
import Testing

/// The real binary: exit codes, --json, the demo, tampering found with the sqlite3 tool, concurrent writers.
@Suite(.serialized) struct CLITests {}

extension CLITests {
    @Suite(.tags(.process)) struct ProcessTests {
        let dir = Paths.trees

        func initLog(_ path: String) throws {
            let r = try CLI.run(["init", path, "--service", "\(dir)/service.json", "--webmap", "\(dir)/webmap.json", "--rules", "\(dir)/rules.json", "--data"]
                                + ["Species", "Neighborhoods", "Trees", "Inspections"].map { "\(dir)/baseline/\($0).json" })
            #expect(r.status == 0, "\(r.stderr)")
        }

        @Test func theBinaryIsBuilt() throws {
            #expect(FileManager.default.isExecutableFile(atPath: CLI.binary), "swift test builds the editlog product at \(CLI.binary)")
        }

        @Test func demoTellsWhatHappenedAndVerifies() throws {
            let tmp = TempPath()
            let r = try CLI.run("demo", "--db", tmp.path)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("History of tree"))
            #expect(r.stdout.contains("rule:tree-latest-inspection") || r.stdout.contains("rule:tree-neighborhood"))
            #expect(r.stdout.contains("canceled"))
            #expect(r.stdout.contains("verify: ok"))
            // The whole story, each step with the command that does it by hand, and no raw JSON in the text.
            for step in ["$ editlog replay", "$ editlog diff", "$ editlog bundle export", "$ editlog bundle import", "$ editlog conflicts",
                         "$ editlog serve", "$ editlog sync", "$ editlog report", "$ editlog verify"] {
                #expect(r.stdout.contains(step), "the demo does not show \(step)")
            }
            #expect(r.stdout.contains("the later commit by client time wins"), "the bundle conflict names its rule")
            #expect(!r.stdout.contains("{\""), "raw JSON in the demo's text")
            // The diff step prints dates (editor tracking's too) in the one human form, not as epoch milliseconds.
            let diffStep = try #require(r.stdout.components(separatedBy: "── What changed between two moments").dropFirst().first?.components(separatedBy: "── ").first)
            #expect(diffStep.contains(" → ") && diffStep.range(of: #"\d{13}"#, options: .regularExpression) == nil, "\(diffStep)")
            let json = try JSONParser.parse(try CLI.run("demo", "--db", TempPath().path, "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            let story = try #require(json["story"])
            #expect(FileManager.default.fileExists(atPath: story["replay"]?["out"]?.stringValue ?? "-"))
            #expect(FileManager.default.fileExists(atPath: story["report"]?.stringValue ?? "-"))
            #expect(story["conflict"]?["winner"]?.stringValue == "remote" && story["conflict"]?["rule"] == "client-time")
            #expect((story["sync"]?["pushed"]?.arrayValue?.count ?? 0) >= 1)
            let v = try CLI.run("verify", tmp.path, "--json")
            let report = try JSONParser.parse(v.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(v.status == 0 && report["ok"] == true && report["projectionsChecked"] == true)
        }

        @Test func verifyNamesThePositionOfAByteChangedWithTheSqlite3Tool() throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") else {
                Issue.record("sqlite3 is not installed (.ci/run installs it)"); return
            }
            let tmp = TempPath()
            #expect(try CLI.run("demo", "--db", tmp.path).status == 0)
            let head = try JSONParser.parse(try CLI.run("verify", tmp.path, "--json").stdout)["headHash"]!.stringValue!
            // An auditor's anchored head passes on the untouched log and fails on any other head.
            #expect(try CLI.run("verify", tmp.path, "--expect-head", head).status == 0)
            #expect(try CLI.run("verify", tmp.path, "--expect-head", String(repeating: "0", count: 64)).status == 69)
            // Change one byte of event 500's payload, the way an attacker with the file would.
            let sql = """
                DROP TRIGGER events_append_only_update;
                UPDATE events SET payload = substr(payload, 1, 10) || char(unicode(substr(payload, 11, 1)) + 1) || substr(payload, 12) WHERE position = 500;
                """
            let s = try CLI.sh("/usr/bin/sqlite3 '\(tmp.path)' \"\(sql.replacingOccurrences(of: "\"", with: "\\\""))\"")
            #expect(s.status == 0, "\(s.stderr)")
            let v = try CLI.run("verify", tmp.path, "--json")
            #expect(v.status == 69)
            let report = try JSONParser.parse(v.stdout)
            #expect(report["firstBadPosition"] == 500)
            #expect(v.stderr.contains("position 500"))
        }

        @Test func exitCodesAndMessagesForBadInput() throws {
            let tmp = TempPath()
            try initLog(tmp.path)
            let script = TempPath("script")
            try "{\"op\":\"edit\",\"layer\":\"Trees\",\"globalId\":\"{00000000-0000-4000-8000-000000000001}\"}\n".write(toFile: script.path, atomically: true, encoding: .utf8)
            let r = try CLI.run("record", tmp.path, script.path)
            #expect(r.status == 68 && r.stderr.contains("line 1") && r.stderr.contains("does not exist"))
            try "{\"op\":\"nope\"}\n".write(toFile: script.path, atomically: true, encoding: .utf8)
            let r2 = try CLI.run("record", tmp.path, script.path)
            #expect(r2.status == 65 && r2.stderr.contains("line 1: unknown op"))
            #expect(try CLI.run("show", tmp.path, "not-a-guid").status == 65)
            #expect(try CLI.run("show", tmp.path, "{00000000-0000-4000-8000-000000000001}").status == 68)
            #expect(try CLI.run("query", tmp.path, "--layer", "Nope").status == 65)
            #expect(try CLI.run("log", tmp.path, "--since", "yesterday").status == 64)
            #expect(try CLI.run("init", tmp.path, "--service", "\(dir)/service.json").status == 67)  // never overwrites
            #expect(try CLI.run("verify", script.path).status == 69)  // not a log
            let missing = TempPath()
            #expect(try CLI.run("init", missing.path, "--service", "\(dir)/rules.json").status == 65)
            #expect(!FileManager.default.fileExists(atPath: missing.path))
        }

        @Test func everyDataCommandHasJSON() throws {
            let tmp = TempPath()
            try initLog(tmp.path)
            let tree = try Fixture.treeWithInspections().tree
            for args in [["query", tmp.path, "--layer", "Trees"], ["show", tmp.path, tree], ["history", tmp.path, tree],
                         ["sessions", tmp.path], ["verify", tmp.path], ["rebuild", tmp.path]] {
                let r = try CLI.run(args + ["--json"])
                #expect(r.status == 0, "\(args): \(r.stderr)")
                #expect((try? JSONParser.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))) != nil, "\(args) --json is not JSON")
            }
            let log = try CLI.run("log", tmp.path, "--json", "--layer", "Species")
            let lines = log.stdout.split(separator: "\n")
            #expect(lines.count == 45)
            #expect(lines.allSatisfy { (try? JSONParser.parse(String($0)))?["type"] == "FeatureBaselined" })
            #expect(try CLI.run("log", tmp.path, "--layer", "Species").stdout.hasSuffix("\n45 events\n"))
            let tree2 = try Fixture.globalIds("Trees")[0]
            #expect(try CLI.run("log", tmp.path, "--feature", tree2, "--json").stdout.split(separator: "\n").count == 1)
            let q = try JSONParser.parse(try CLI.run("query", tmp.path, "--layer", "Trees", "--json").stdout)
            #expect(q["features"]?.arrayValue?.count == 240 && q["geometryType"] == "esriGeometryPoint")
        }

        @Test func concurrentWritersFromSeparateProcessesBothLandWithoutAGap() throws {
            let tmp = TempPath()
            try initLog(tmp.path)
            let trees = try Fixture.globalIds("Trees")
            var scripts: [TempPath] = []
            for w in 0..<2 {
                let s = TempPath("w\(w)")
                var lines: [String] = []
                for k in 0..<40 {
                    let tree = trees[w * 100 + k]
                    lines.append(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"w\#(w)-\#(k)","actor":"writer\#(w)"}"#)
                    lines.append(#"{"op":"set","field":"DBH","value":\#(k + 1).5}"#)
                    lines.append(#"{"op":"finish"}"#)
                }
                try lines.joined(separator: "\n").write(toFile: s.path, atomically: true, encoding: .utf8)
                scripts.append(s)
            }
            // Two processes per script file (different bytes each), plus a reader, all at once.
            let writers = try scripts.map { try CLI.start(["record", tmp.path, $0.path, "--json"]) }
            let reader = try CLI.start(["query", tmp.path, "--layer", "Trees", "--json"])
            var outputs: [String] = []
            for (p, out, err) in writers {
                let o = out.fileHandleForReading.readDataToEndOfFile()
                let e = err.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                #expect(p.terminationStatus == 0, "\(String(decoding: e, as: UTF8.self))")
                outputs.append(String(decoding: o, as: UTF8.self))
            }
            _ = reader.1.fileHandleForReading.readDataToEndOfFile()
            reader.0.waitUntilExit()
            #expect(reader.0.terminationStatus == 0)
            let log = try EditLog.open(at: tmp.path)
            var positions: [Int64] = []
            try log.events(LogFilter()) { positions.append($0.position) }
            #expect(positions == Array(1...Int64(positions.count)))
            #expect(try log.sessions(status: "committed").count == 80)
            #expect(try log.verify().ok)
            // Each writer's events are contiguous: one transaction each.
            for o in outputs {
                let j = try JSONParser.parse(o)
                #expect(j["lastPosition"]!.intValue! - j["firstPosition"]!.intValue! + 1 == j["events"]!.intValue!)
            }
        }
    }
}
