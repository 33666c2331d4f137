@testable import EditLog
import EditLogImport
import EditLogProjections
import EditLogStore
import Foundation
import Testing

/// The one write unit of work (`WriteUnit`): emit appends and projects at once, derive runs the rules on the state the
/// transaction holds, release finds nothing to do in a log that never merged, a unit that throws writes nothing, and a
/// script's failing step names its line by a typed field.
@Suite struct WriteUnitTests {
    static let ctx = EventContext(actor: "unit-test", device: "test-device", clientTime: "2026-05-01T10:00:00.000Z")

    /// A rule's change of one field (the payload `FeatureDerived` has), emitted by hand.
    static func derived(_ unit: inout WriteUnit, layer: Int, globalId: String, field: String, old: JSONValue, new: JSONValue,
                        expected: ExpectedVersion = .any) throws -> RecordedEvent {
        try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.feature(layer: layer, globalId: globalId), type: .featureDerived,
                               payload: ["layer": .int(Int64(layer)), "globalId": .string(globalId), "rule": "test",
                                         "changes": .object([field: ["old": old, "new": new]])],
                               context: ctx, session: nil, cause: Cause.rule("test")), expected: expected)
    }

    @Test func emitAppendsAndProjectsAtOnce() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let trees = try #require(log.schema.layer("Trees"))
        let tree = try Fixture.treeWithoutInspections()
        let head = try log.eventCount()
        let events = try log.write { unit -> [RecordedEvent] in
            #expect(unit.headPosition == head)
            let old = try #require(try unit.world.feature(layer: trees.id, globalId: tree)).attributes["DBH"] ?? .null
            let r = try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: old, new: 42.5)
            #expect(r.position == head + 1)
            #expect(unit.headPosition == r.position && unit.headHash == r.hash)
            // The next step of the same transaction reads the state the event left.
            #expect(try unit.world.feature(layer: trees.id, globalId: tree)?.attributes["DBH"]?.doubleValue == 42.5)
            return unit.appended
        }
        #expect(events.count == 1)
        #expect(try log.attributes(tree)["DBH"]?.doubleValue == 42.5)
        #expect(try log.eventCount() == head + 1)
        let report = try log.verify()
        #expect(report.ok, "\(report.problems)")
    }

    @Test func deriveRunsTheRulesOnTheTransactionsStateAndAdjustsOrLeavesOut() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let trees = try #require(log.schema.layer("Trees")), inspections = try #require(log.schema.layer("Inspections"))
        let (tree, _) = try Fixture.treeWithInspections()
        try log.write { unit in
            let children = try unit.world.features(layer: inspections.id, where: "TreeGlobalID", equals: .string(tree))
            let latest = try #require(children.max { a, b in
                let da = a.attributes["CollectedDate"]?.doubleValue ?? -.infinity, db = b.attributes["CollectedDate"]?.doubleValue ?? -.infinity
                return da != db ? da < db : a.globalId < b.globalId
            })
            let before = latest.attributes
            _ = try Self.derived(&unit, layer: inspections.id, globalId: latest.globalId, field: "DBH", old: before["DBH"] ?? .null, new: 77.25)
            let trigger = RuleEngine.Trigger.committed(layer: inspections.id, globalId: latest.globalId, kind: .edit, before: before, session: nil)
            // Left out: nothing emitted.
            let head = unit.headPosition
            #expect(try unit.derive(after: trigger, context: Self.ctx) { _ in nil }.isEmpty)
            #expect(unit.headPosition == head)
            // Adjusted: the rollup of the parent, emitted and projected.
            let out = try unit.derive(after: trigger, context: Self.ctx) { p in
                var p = p
                guard case .featureDerived(var d) = p.body else { return nil }
                d.conflictId = "adjusted"
                p.body = d.body
                return p
            }
            #expect(out.count == 1)
            let r = try #require(out.first)
            #expect(r.type == EventType.featureDerived.rawValue && r.stream == StreamName.feature(layer: trees.id, globalId: tree))
            #expect(r.cause == Cause.rule("tree-latest-inspection") && r.actor == "unit-test")
            guard case .featureDerived(let d) = try r.body else { Issue.record("not a FeatureDerived body"); return }
            #expect(d.conflictId == "adjusted" && r.payload["conflictId"] == "adjusted")
            #expect(try unit.world.feature(layer: trees.id, globalId: tree)?.attributes["DBH"]?.doubleValue == 77.25)
            // Derived again from the state that holds it: nothing changes.
            #expect(try unit.derive(after: trigger, context: Self.ctx).isEmpty)
            // A log that never merged has nothing to release.
            try unit.release(deleted: [(trees.id, tree)], left: [], context: Self.ctx)
            #expect(unit.headPosition == r.position)
        }
        #expect(try log.attributes(tree)["DBH"]?.doubleValue == 77.25)
        let report = try log.verify()
        #expect(report.ok, "\(report.problems)")
    }

    @Test func aUnitThatThrowsWritesNothingAndTheNextStartsFromTheLog() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let trees = try #require(log.schema.layer("Trees"))
        let tree = try Fixture.treeWithoutInspections()
        let head = try log.eventCount()
        let digest = try log.digestOfProjections()
        struct Stop: Error {}
        do {
            try log.write { unit in
                for v in [10.0, 11.0, 12.0] { _ = try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: .null, new: .double(v)) }
                #expect(unit.headPosition == head + 3)
                throw Stop()
            }
            Issue.record("the unit did not throw")
        } catch {
            #expect(error.kind == .io)
        }
        #expect(try log.eventCount() == head)
        #expect(try log.digestOfProjections() == digest)
        // The appender's cache of the head was dropped with the transaction: the next unit appends after the log's last event.
        let r = try log.write { unit in try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: .null, new: 13) }
        #expect(r.position == head + 1)
        let report = try log.verify()
        #expect(report.ok, "\(report.problems)")
    }

    @Test func anExpectedVersionThatDoesNotHoldIsAConflictAndWritesNothing() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let trees = try #require(log.schema.layer("Trees"))
        let tree = try Fixture.treeWithoutInspections()
        let stream = StreamName.feature(layer: trees.id, globalId: tree)
        let version = try #require(log.streamEvents(stream).last?.streamVersion)
        let head = try log.eventCount()
        for expected in [ExpectedVersion.exact(version - 1), .noStream] {
            do {
                _ = try log.write { unit in
                    _ = try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: .null, new: 1)  // appended, then rolled back
                    return try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: .null, new: 2, expected: expected)
                }
                Issue.record("expected \(expected) was taken")
            } catch {
                #expect(error.kind == .conflict, "\(error)")
                #expect(error.message.contains("stream \(stream)"), "\(error)")
            }
        }
        #expect(try log.eventCount() == head)
        let r = try log.write { unit in try Self.derived(&unit, layer: trees.id, globalId: tree, field: "DBH", old: .null, new: 3, expected: .exact(version)) }
        #expect(r.streamVersion == version + 1)
    }

    @Test func aFailingScriptLineIsATypedFieldAndTheMessageIsUnchanged() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let tree = try Fixture.treeWithoutInspections()
        let error = try log.reject(
            #"{"op":"edit","layer":"Trees","globalId":"\#(tree)","actor":"ann","device":"d1","at":"2026-05-01T10:00:00Z","session":"s-1"}"#,
            #"{"op":"set","field":"DBH","value":33.5}"#,
            #"{"op":"set","field":"DBH","value":-5}"#,
            #"{"op":"finish"}"#)
        #expect(error.scriptLine == 3)
        #expect(error.location == "line 3" || error.location?.hasPrefix("line 3: ") == true, "\(error)")
        #expect(error.description.hasPrefix("line 3"), "\(error)")
        #expect(error.kind == .validation)
        // A line that does not parse names its line too.
        do {
            _ = try ScriptParser.parse(Array("{\"op\":\"cancel\",\"session\":\"s\"}\n\n{\"op\":\"nope\"}\n".utf8))
            Issue.record("the script parsed")
        } catch {
            #expect(error.scriptLine == 3 && error.location?.hasPrefix("line 3") == true, "\(error)")
        }
        // Set by the parser and the record loop only: an error they did not meet names no line.
        #expect(EditLogError(.validation, "x", at: "line 3").scriptLine == nil)
        #expect(EditLogError(.validation, "x").at(line: 7) == { var e = EditLogError(.validation, "x", at: "line 7"); e.scriptLine = 7; return e }())
    }
}
