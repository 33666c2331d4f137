import EditLog
import Foundation
import Testing

@Suite struct RecordScriptTests {
    @Test func invalidFixtureScriptsFailAtTheirLineAndWriteNothing() throws {
        let dir = Paths.trees + "/scripts/invalid"
        let expected = try InputFiles.json(dir + "/expected.json").objectValue ?? [:]
        #expect(expected.count >= 15)
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let before = try log.digestOfProjections()
        let count = try log.eventCount()
        for name in expected.keys.sorted() {
            let bytes = try InputFiles.bytes(dir + "/" + name)
            let cmds = try ScriptParser.parse(bytes)
            do {
                _ = try log.record(cmds, name: name, sha256: InputFiles.sha256(bytes))
                Issue.record("\(name) was accepted")
            } catch {
                let line = expected[name]!["line"]!.intValue!
                #expect(error.location == "line \(line)" || error.location?.hasPrefix("line \(line): ") == true, "\(name): \(error)")
                #expect(error.scriptLine == Int(line), "\(name): \(error)")
                #expect(error.message.lowercased().contains(expected[name]!["contains"]!.stringValue!), "\(name): \(error)")
            }
        }
        #expect(try log.eventCount() == count)
        #expect(try log.digestOfProjections() == before)
    }

    @Test func everyValidFixtureScriptRecordsAndTheLogVerifies() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let dir = Paths.trees + "/scripts"
        let scripts = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".ndjson") }.sorted()
        #expect(scripts.count >= 8)
        var ops = Set<String>()
        for s in scripts {
            let bytes = try InputFiles.bytes(dir + "/" + s)
            let cmds = try ScriptParser.parse(bytes)
            cmds.forEach { ops.insert($0.op.name) }
            let r = try log.record(cmds, name: s, sha256: InputFiles.sha256(bytes))
            #expect(r.alreadyRecordedAt == nil && !r.events.isEmpty)
        }
        #expect(ops == ["create", "edit", "set", "relate", "attach", "renameAttachment", "detach", "finish", "cancel", "delete", "resume", "abandon"])
        let report = try log.verify()
        #expect(report.ok, "\(report.problems)")
        #expect(report.projectionsChecked)
    }

    @Test func aScriptIsAtomicAndARepeatIsANoOp() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let tree = try Fixture.treeWithoutInspections()
        let good = Array(#"""
            {"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"ann","device":"d1","at":"2026-05-01T10:00:00Z"}
            {"op":"set","field":"DBH","value":33.5}
            {"op":"finish"}
            """#.utf8)
        let bad = good + Array("\n{\"op\":\"edit\",\"layer\":\"Trees\",\"globalId\":\"\(tree)\"}\n{\"op\":\"set\",\"field\":\"DBH\",\"value\":999}\n".utf8)
        let count = try log.eventCount()
        do {
            _ = try log.record(try ScriptParser.parse(bad), name: "bad", sha256: InputFiles.sha256(bad))
            Issue.record("accepted")
        } catch {
            #expect(error.location == "line 5: Trees.DBH")
            #expect(error.message.contains("outside the range domain"))
        }
        #expect(try log.eventCount() == count)
        #expect(try log.attributes(tree)["DBH"] != .double(33.5))
        let r1 = try log.record(try ScriptParser.parse(good), name: "good", sha256: InputFiles.sha256(good))
        #expect(r1.events.map(\.type) == ["SessionStarted", "AttributeStaged", "SessionCommitted", "ScriptRecorded"])
        // The steps found their session by actor, inside one transaction, and the commit carried the staged value.
        #expect(try log.attributes(tree)["DBH"] == .double(33.5))
        let r2 = try log.record(try ScriptParser.parse(good), name: "good", sha256: InputFiles.sha256(good))
        #expect(r2.alreadyRecordedAt == r1.events.last?.position && r2.events.isEmpty)
        #expect(try log.eventCount() == count + Int64(r1.events.count))
    }

    @Test func parserErrorsNameTheLine() throws {
        let cases: [(String, String)] = [
            ("{\"op\":\"finish\"}\n{not json}", "line 2"),
            ("{\"op\":\"explode\"}", "unknown op \"explode\""),
            ("{\"op\":\"finish\",\"extra\":1}", "unknown key \"extra\""),
            ("{\"op\":\"set\",\"field\":\"DBH\"}", "needs \"value\""),
            ("[1,2]", "expected a JSON object"),
            ("{\"op\":\"set\",\"field\":\"DBH\",\"value\":NaN}", "NaN"),
            ("{\"op\":\"set\",\"field\":\"DBH\",\"value\":1e999}", "out of range"),
            ("{\"op\":\"finish\",\"at\":\"yesterday\"}", "ISO-8601"),
            ("{\"op\":\"attach\",\"attachmentId\":\"x\",\"name\":\"a\",\"contentType\":\"a/b\",\"dataBase64\":\"@@\"}", "base64"),
            ("{\"op\":\"attach\",\"attachmentId\":\"x\",\"name\":\"a\",\"contentType\":\"a/b\",\"dataBase64\":\"AA==\",\"preferredSize\":\"huge\"}", "preferredSize"),
            ("{\"op\":\"resume\"}", "needs \"session\""),
            ("{\"op\":\"finish\",\"op\":\"cancel\"}", "duplicate key"),
        ]
        for (text, needle) in cases {
            #expect(throws: EditLogError.self) { try ScriptParser.parse(Array(text.utf8)) }
            do { _ = try ScriptParser.parse(Array(text.utf8)) } catch {
                #expect(error.description.contains(needle), "\(text): \(error)")
                #expect(error.kind == .invalidInput)
            }
        }
        // Invalid UTF-8 in a string.
        var bytes = Array("{\"op\":\"set\",\"field\":\"Notes\",\"value\":\"".utf8)
        bytes += [0xC3, 0x28]
        bytes += Array("\"}".utf8)
        #expect(throws: EditLogError.self) { try ScriptParser.parse(bytes) }
    }

    @Test func actorDeviceAndTimeAreInherited() throws {
        let cmds = try script([
            #"{"op":"edit","layer":"Trees","globalId":"x","actor":"ann","device":"d1","at":"2026-05-01T10:00:00Z"}"#,
            #"{"op":"set","field":"DBH","value":1,"at":"2026-05-01T10:01:00Z"}"#,
            #"{"op":"finish","actor":"bob"}"#,
        ])
        #expect(cmds.map(\.actor) == ["ann", "ann", "bob"])
        #expect(cmds.map(\.device) == ["d1", "d1", "d1"])
        #expect(cmds.map(\.at) == ["2026-05-01T10:00:00.000Z", "2026-05-01T10:01:00.000Z", "2026-05-01T10:01:00.000Z"])
    }
}
