import EditLog
import Foundation
import Testing

/// No orphan: a parent deleted on one side is kept where a child was added or pointed at it on the other, and deleted
/// again (with the children kept with it) once nothing keeps it, whichever way the logs learn it.
@Suite struct MergeOrphanTests {
    /// Device a deletes a tree with its inspections; device b adds an inspection under it. The tree is kept so the new
    /// inspection is no orphan, and the inspections the delete took along come back with it: on both sides, in both
    /// orders, whatever the policy.
    @Test(arguments: [MergePolicy.lastInWins, .localWins], [false, true])
    func aTreeKeptForAnOrphanKeepsItsOtherInspections(policy: MergePolicy, aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        let insp = newGID(40)
        let lines = [
            #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"bob-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(t)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"},"at":"2026-06-20T10:30:00Z"}"#,
            #"{"op":"finish","session":"bob-i","at":"2026-06-20T10:31:00Z"}"#,
        ]
        for cmd in try script(lines, actor: "bob") { try b.apply(cmd) }
        for (from, to) in aFirst ? [(a, b), (b, a)] : [(b, a), (a, b)] {
            let r = try MergeDevices.exchange(from, into: to, policy: policy)
            // The report's positions cover what the import appended, its own decisions (the orphan's) included.
            #expect(r.lastPosition == (try to.lastPosition()))
        }
        for (log, other) in [(a, b), (b, a)] {
            // This log's decisions name the other log, whose events they decide about.
            for e in try log.events() where e.type == EventType.mergeDecided.rawValue && e.payload["log"]?.stringValue == log.logId {
                #expect(e.cause == "merge:\(other.logId)", "\(e.payload.serialized())")
            }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false, "\(policy): the tree, kept for the new inspection")
            for g in inspections + [insp] {
                #expect(try log.show(globalId: g)["deleted"] == false, "\(policy): inspection \(g)")
                #expect(try log.attributes(g)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == t)
            }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    /// Every pair of logs exchanges everything, twice.
    static func exchangeAll(_ logs: [EditLog], order: [(Int, Int)]) throws {
        for _ in 0..<2 { for (f, t) in order { try MergeDevices.exchange(logs[f], into: logs[t], viaBundle: false) } }
    }

    /// The decisions `log` recorded after `position` are all deletes-again, of exactly `ids`.
    static func expectDeletedAgain(_ log: EditLog, after position: Int64, exactly ids: [String],
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let again = try log.events(after: position).filter { $0.type == EventType.mergeDecided.rawValue }
        #expect(Set(again.compactMap { $0.payload["globalId"]?.stringValue }) == Set(ids) && again.allSatisfy { $0.payload["deleteAgain"] == true },
                "\(again.map { $0.payload.serialized() })", sourceLocation: sourceLocation)
    }

    /// Three devices; c points inspection i of tree w2 at tree w (10:01), b deletes w (10:02), and c imports b's events:
    /// w is kept for i, with the inspections b's cascade took (`kept`).
    static func treeKeptForAnOrphan(_ paths: [TempPath]) throws -> (logs: [EditLog], w: String, kept: [String], w2: String, i: String) {
        let logs = try ["a", "b", "c"].enumerated().map { try MergeDevices.device($1, paths[$0], seed: UInt64($0 + 1)) }
        let trees = try Fixture.treesWithInspections()
        let (w, kept) = trees[0], (w2, others) = trees[1]
        let i = others[0]
        try MergeDevices.relate(logs[2], i, to: w, at: 1, actor: "carol")
        try MergeDevices.delete(logs[1], "Trees", w, at: 2, actor: "bob")
        try MergeDevices.exchange(logs[1], into: logs[2], viaBundle: false)
        #expect(try logs[2].show(globalId: w)["deleted"] == false, "w, kept for i")
        for g in kept { #expect(try logs[2].show(globalId: g)["deleted"] == false, "w's inspection \(g), back with it") }
        return (logs, w, kept, w2, i)
    }

    /// The orphan gap the three-device fuzz found. Device c re-points inspection i (of tree w2) to tree w (10:01);
    /// device b deletes w (10:02) and c imports it: w is kept for i, and the inspections b's cascade took come back
    /// with it. Then b deletes w2 (10:03), whose cascade takes i (on b, i still points at w2). Once all logs hold every
    /// event, i is deleted (b's cascade is later than c's re-point), so nothing keeps w: c deletes it again with the
    /// inspections it kept, and holds what a and b hold (they never needed w kept), whatever order the rest comes in.
    @Test(arguments: [[(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)], [(2, 1), (1, 0), (2, 0), (0, 2), (1, 2), (0, 1)]])
    func aParentKeptForAnOrphanIsDeletedAgainWhenTheOrphanGoes(order: [(Int, Int)]) throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, i) = try Self.treeKeptForAnOrphan(paths)
        let (a, b, c) = (logs[0], logs[1], logs[2])
        try MergeDevices.delete(b, "Trees", w2, at: 3, actor: "bob")
        try Self.exchangeAll(logs, order: order)
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.show(globalId: i)["deleted"] == true, "\(log.logId): i")
            for g in kept { #expect(try log.show(globalId: g)["deleted"] == true, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let digests = try logs.map { try $0.digestOfContent() }
        let diff = try MergeDevices.differences(logs)
        #expect(Set(digests).count == 1, "content digests differ: \(diff)")
        // c's decision, with its own history line; a and b never kept w, so never deleted it again.
        let again = try c.events().filter { $0.type == EventType.mergeDecided.rawValue && $0.payload["deleteAgain"] == true }
        #expect(Set(again.compactMap { $0.payload["globalId"]?.stringValue }) == Set([w] + kept), "\(again.map { $0.payload.serialized() })")
        #expect(again.filter { $0.payload["cascadeOf"]?.stringValue == w }.count == kept.count)
        for log in [a, b] { #expect(try log.events().allSatisfy { $0.payload["deleteAgain"] == nil || $0.payload["log"]?.stringValue != log.logId }) }
        // The decisions validate against the schemas (deleteAgain, detachAttachments, cascadeOf).
        let v = SchemaFilesTests.validator()
        for e in try c.events() where e.type == EventType.mergeDecided.rawValue {
            let errors = try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
            #expect(errors.isEmpty, "position \(e.position): \(errors)")
        }
        let history = try c.history(globalId: w).entries
        #expect(history.contains { $0.field == "@deleted" && $0.new == true && $0.position == again.first?.position }, "\(history.map { "\($0.position) \($0.field) \($0.new.serialized())" })")
    }

    /// Device c points inspection i of tree w2 at tree w (10:01); b deletes w (10:02) and c imports it: w is kept for i.
    /// Then c points i back at w2 (10:03): nothing keeps w, so c deletes it again (with the inspections kept with it) as
    /// it records the change, and every log ends with w deleted and i under w2.
    @Test func aParentKeptForAnOrphanIsDeletedAgainWhenTheOrphanIsPointedElsewhereHere() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, i) = try Self.treeKeptForAnOrphan(paths)
        let c = logs[2]
        let before = try c.lastPosition()
        try MergeDevices.relate(c, i, to: w2, at: 3, actor: "carol")
        try Self.expectDeletedAgain(c, after: before, exactly: [w] + kept)
        try Self.exchangeAll(logs, order: [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)])
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w2, "\(log.logId): i under w2")
            #expect(try log.show(globalId: i)["deleted"] == false, "\(log.logId): i")
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try MergeDevices.differences(logs)
        #expect(Set(try logs.map { try $0.digestOfContent() }).count == 1, "\(diff)")
    }

    /// `diff` (and serve's extractChanges, the report's map) follows this log's decisions as the projection does: over
    /// c's import of b's delete of w, w and its inspections are not deleted (kept for i, and revived with w); over the
    /// import that deletes them again, they are; over both, each change's kind agrees with the projection.
    @Test func diffFollowsTheDecisionsOfThisLog() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, _) = try Self.treeKeptForAnOrphan(paths)
        let (b, c) = (logs[1], logs[2])
        let start = try #require(try c.events().first { $0.type == EventType.featureDeleted.rawValue && $0.payload["globalId"]?.stringValue == w }).position - 1
        let mid = try c.lastPosition()
        let first = try c.diff(from: .position(start), to: .position(mid))
        for g in [w] + kept { #expect(first.changes.first { $0.globalId == g }?.kind != .deleted, "\(g) is live here") }
        try MergeDevices.delete(b, "Trees", w2, at: 3, actor: "bob")
        try MergeDevices.exchange(b, into: c, viaBundle: false)
        let second = try c.diff(from: .position(mid), to: .position(try c.lastPosition()))
        for g in [w] + kept { #expect(second.changes.first { $0.globalId == g }?.kind == .deleted, "\(g), deleted again") }
        let whole = try c.diff(from: .position(start), to: .position(try c.lastPosition()))
        #expect(!whole.changes.isEmpty)
        for change in whole.changes {
            let shown = try c.show(globalId: change.globalId)
            #expect((change.kind == .deleted) == (shown["deleted"] == true), "\(change.globalId): \(change.kind)")
            // Editor tracking as this log's projection holds it, merge decisions (`keepTracking`) included.
            let layer = try #require(c.schema.layer(id: change.layer))
            for f in change.fields where change.kind != .deleted && layer.isEditorTrackingField(f.field) {
                #expect(f.new == (shown["attributes"]?[f.field] ?? .null), "\(change.globalId) \(f.field)")
            }
            // blame reads the same rule (`EditorTracking`).
            for b in try c.blame(globalId: change.globalId).fields where layer.isEditorTrackingField(b.field) {
                #expect(b.value == (shown["attributes"]?[b.field] ?? .null), "blame \(change.globalId) \(b.field)")
            }
        }
    }

    /// c keeps tree w for inspection i (`treeKeptForAnOrphan`). Device a had pointed i at a third tree w3 earlier (10:00):
    /// when c imports it, i's key is a field conflict that c's later re-point wins. An investigator on c then takes a's
    /// value: i leaves w, nothing keeps w, and c deletes it again in the resolution's transaction; every log ends so.
    @Test func aResolutionThatPointsTheOrphanElsewhereDeletesItsKeptParentAgain() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, _, i) = try Self.treeKeptForAnOrphan(paths)
        let (a, c) = (logs[0], logs[2])
        let w3 = try Fixture.treesWithInspections()[2].tree
        try MergeDevices.relate(a, i, to: w3, at: 0, actor: "ann")
        try MergeDevices.exchange(a, into: c, viaBundle: false)
        let conflict = try #require(try c.conflicts().map(\.conflict).first { $0.globalId == i && $0.field?.lowercased() == "treeglobalid" })
        #expect(try c.show(globalId: w)["deleted"] == false)
        let before = try c.lastPosition()
        try c.resolveConflict(id: conflict.id, take: .remote, actor: "ivy", device: "desk", at: "2026-06-20T10:05:00Z")
        try Self.expectDeletedAgain(c, after: before, exactly: [w] + kept)
        try Self.exchangeAll(logs, order: [(2, 0), (2, 1), (0, 1), (1, 0), (0, 2), (1, 2)])
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w3, "\(log.logId): i under w3")
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try MergeDevices.differences(logs)
        #expect(Set(try logs.map { try $0.digestOfContent() }).count == 1, "\(diff)")
    }
}
