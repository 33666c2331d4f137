import EditLog
import EditLogStore
import Foundation
import Testing

/// The exit-code contract (README, "Exit codes"): one case through the real binary for every code, and
/// stored state that is not what the log wrote is exit 69 naming the position, never a crash or a skip.
@Suite(.serialized) struct ExitCodeTests {
    enum Situation: String, CaseIterable { case usage, invalidInput, validation, conflict, notFound, corrupt, unsupported, io }
}

extension ExitCodeTests {
    @Suite(.tags(.process)) struct ProcessTests {
        let dir = Paths.trees
        let tree = "{" + "00000000-0000-4000-8000-000000000001" + "}"

        func initLog(_ path: String) throws -> String {
            let r = try CLI.run(["init", path, "--service", "\(dir)/service.json", "--webmap", "\(dir)/webmap.json", "--rules", "\(dir)/rules.json",
                                 "--data", "\(dir)/baseline/Species.json", "\(dir)/baseline/Neighborhoods.json", "\(dir)/baseline/Trees.json"])
            #expect(r.status == 0, "\(r.stderr)")
            return try Fixture.globalIds("Trees")[0]
        }

        func script(_ lines: String...) throws -> TempPath {
            let t = TempPath("script.ndjson")
            try (lines.joined(separator: "\n") + "\n").write(toFile: t.path, atomically: true, encoding: .utf8)
            return t
        }

        @Test(arguments: Situation.allCases)
        func everyExitCodeHasItsSituation(_ situation: Situation) throws {
            let tmp = TempPath()
            let tree = try initLog(tmp.path)
            let r: CLI.Result
            let expected: Int32
            switch situation {
            case .usage:
                (r, expected) = (try CLI.run("log", tmp.path, "--frobnicate"), 64)
            case .invalidInput:  // a name the schema does not have
                let s = try script(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"a"}"#, #"{"op":"set","field":"Height","value":1,"actor":"a"}"#)
                (r, expected) = (try CLI.run("record", tmp.path, s.path), 65)
                #expect(r.stderr.contains("unknown field \"Height\""))
            case .validation:  // a well-formed value the field's domain refuses
                let s = try script(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"a"}"#, #"{"op":"set","field":"Condition","value":"Sparkly","actor":"a"}"#)
                (r, expected) = (try CLI.run("record", tmp.path, s.path), 66)
            case .conflict:  // a second open session on one feature
                let s = try script(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"a","session":"one"}"#,
                                   #"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"b","session":"two"}"#)
                (r, expected) = (try CLI.run("record", tmp.path, s.path), 67)
            case .notFound:
                (r, expected) = (try CLI.run("show", tmp.path, "{00000000-0000-4000-8000-00000000FFFF}"), 68)
            case .corrupt:
                try RawLog.writeWithoutTransaction(tmp.path) { db in
                    try db.execute(sql: "DROP TRIGGER events_append_only_update; UPDATE events SET actor = 'mallory' WHERE position = 3")
                }
                (r, expected) = (try CLI.run("verify", tmp.path), 69)
                #expect(r.stdout.contains("position 3") || r.stderr.contains("position 3"), "\(r.stdout)\(r.stderr)")
            case .unsupported:  // a log written by a newer EditLog
                try RawLog.write(tmp.path) { db in try db.execute(sql: "UPDATE log_meta SET value = '99' WHERE key = 'format'") }
                (r, expected) = (try CLI.run("log", tmp.path), 70)
            case .io:  // the directory for a new log does not exist
                (r, expected) = (try CLI.run("init", "/nonexistent-\(UUID().uuidString)/log.sqlite", "--service", "\(dir)/service.json"), 74)
            }
            #expect(r.status == expected, "\(situation): exit \(r.status), stderr \(r.stderr)")
            #expect(expected == 69 || r.stderr.hasPrefix("editlog: error:") || expected == 64, "\(r.stderr)")
        }

        @Test func anAlteredSessionProjectionIsCorruptNamingThePositionNotACrash() throws {
            let tmp = TempPath()
            let tree = try initLog(tmp.path)
            let open = try script(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"a","session":"s1"}"#)
            #expect(try CLI.run("record", tmp.path, open.path).status == 0)
            let started = try RawLog.read(tmp.path) { db in try Int64.fetchOne(db, sql: "SELECT started_position FROM p_sessions WHERE id = 's1'") }
            // The session projection is not covered by the chain: point the session at a layer the schema lacks.
            try RawLog.write(tmp.path) { db in try db.execute(sql: "UPDATE p_sessions SET state = json_set(state, '$.layer', 99) WHERE id = 's1'") }
            let step = try script(#"{"op":"set","field":"DBH","value":3,"actor":"a","session":"s1"}"#)
            let r = try CLI.run("record", tmp.path, step.path)
            #expect(r.status == 69, "\(r.stderr)")
            #expect(r.stderr.contains("position \(started ?? -1)") && r.stderr.contains("layer 99"), "\(r.stderr)")
            // And a state that is not JSON at all.
            try RawLog.write(tmp.path) { db in try db.execute(sql: "UPDATE p_sessions SET state = '{not json' WHERE id = 's1'") }
            let r2 = try CLI.run("record", tmp.path, step.path)
            #expect(r2.status == 69 && r2.stderr.contains("position \(started ?? -1)"), "\(r2.stderr)")
        }

        @Test func aMalformedStoredPayloadIsReportedByVerifyAndRebuildNotSkipped() throws {
            let tmp = TempPath()
            let tree = try initLog(tmp.path)
            // A chained event whose payload lacks what its type needs (a writer bug, or a foreign log): appended below the facade.
            let store = try EventStore.open(at: tmp.path)
            let bad = try store.write { _, a in
                try a.append(NewEvent(id: store.ids.next(), stream: StreamName.feature(layer: 0, globalId: tree), type: .featureDerived,
                                      payload: ["layer": 0, "globalId": .string(tree), "rule": "x"], context: EventContext(actor: "a", device: "d", clientTime: nil),
                                      session: nil, cause: "rule:x"))
            }
            try store.close()
            let v = try CLI.run("verify", tmp.path, "--json")
            let report = try JSONParser.parse(v.stdout)
            #expect(v.status == 69)
            #expect(report["firstBadPosition"] == .int(bad.position), "\(v.stdout)")
            #expect(v.stdout.contains("FeatureDerived") && v.stdout.contains("changes"), "\(v.stdout)")
            let r = try CLI.run("rebuild", tmp.path)
            #expect(r.status == 69 && r.stderr.contains("position \(bad.position)"), "\(r.stderr)")
        }
    }
}
