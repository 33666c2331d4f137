import EditLog
import Foundation
import Testing

/// An update against a delete: the later write wins, a conflict without a value closes as this log holds it, and a
/// baseline feature deleted on one side stays deleted.
@Suite struct MergeDeleteTests {
    /// Device a deletes a tree (10:01) that device b updates later (10:30); returns the tree.
    static func deleteHereUpdateThere(_ a: EditLog, _ b: EditLog) throws -> String {
        let t = try Fixture.treeWithoutInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        try MergeDevices.set(b, t, [("PlantedBy", "\"still here\"")], at: 30, actor: "bob", session: "bob-5")
        return t
    }

    @Test func aLaterUpdateKeepsADeletedFeatureAndALaterDeleteWins() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let t = try Self.deleteHereUpdateThere(a, b)
        let r1 = try MergeDevices.exchange(a, into: b)
        let r2 = try MergeDevices.exchange(b, into: a)
        #expect(r1.conflicts.contains { $0.kind == .updateDelete && $0.winner == .local })
        #expect(r2.conflicts.contains { $0.kind == .deleteUpdate && $0.winner == .remote })
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false)
            #expect(try log.attributes(t)["PlantedBy"] == "still here")
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
        for log in [a, b] { #expect(try log.digestOfProjections() == (try log.digestOfRebuild())) }
    }

    /// A conflict that takes no value (here update against delete, under manual) closes with --take local: a
    /// resolution that changes nothing, here or in a log it travels to; any other --take is refused, naming the way out.
    @Test func aConflictWithoutAValueClosesAsThisLogHoldsIt() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        _ = try Self.deleteHereUpdateThere(a, b)
        let c = try #require(try MergeDevices.exchange(a, into: b, policy: .manual).conflicts.first { $0.kind == .updateDelete })
        #expect(c.winner == .open)
        #expect(try b.conflict(id: c.id).status == "open")
        let n = try b.eventCount(), digest = try b.digestOfProjections()
        for choice in [ConflictChoice.remote, .base, .value("x")] {
            let e = try #require(throws: EditLogError.self) { try b.resolveConflict(id: c.id, take: choice, actor: "ivy", device: "desk") }
            #expect(e.kind == .unsupported && e.message.contains("--take local closes it"), "\(e)")
        }
        #expect(try b.eventCount() == n)
        try b.resolveConflict(id: c.id, take: .local, actor: "ivy", device: "desk")
        #expect(try b.conflict(id: c.id).status == "resolved")
        #expect(try b.eventCount() == n + 1)
        #expect(try b.digestOfProjections() == digest)
        #expect(try b.digestOfRebuild() == digest)
        // Carried to the log that deleted (under manual, so the tree stays deleted there): its own conflict with b's
        // update, none from the closure.
        let r = try MergeDevices.exchange(b, into: a, policy: .manual)
        #expect(r.conflicts.count == 1 && r.conflicts[0].kind == .deleteUpdate, "\(r.conflicts)")
        #expect(try a.digestOfProjections() == (try a.digestOfRebuild()))
        let v = SchemaFilesTests.validator()
        for e in try b.events() where e.position > n {
            #expect(try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent).isEmpty)
        }
    }

    /// Logs made separately from the same fixtures baselined the same features (their own events, the same content).
    /// A tree deleted on one side, with its inspections (the delete cascades), and left alone on the other is no
    /// conflict either way, and stays deleted under every policy: the other side's baseline is the common base.
    @Test(arguments: MergePolicy.allCases)
    func aCommonBaselineFeatureDeletedOnOneSideIsNoConflictAndStaysDeleted(policy: MergePolicy) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        #expect(try inspections.allSatisfy { try a.show(globalId: $0)["deleted"] == true }, "the delete cascades")
        let intoA = try MergeDevices.exchange(b, into: a, policy: policy)
        let intoB = try MergeDevices.exchange(a, into: b, policy: policy)
        for (r, log) in [(intoA, a), (intoB, b)] {
            #expect(r.conflicts.isEmpty, "\(policy): \(r.conflicts.map { "\($0.kind) \($0.globalId)" })")
            for g in [t] + inspections { #expect(try log.show(globalId: g)["deleted"] == true, "\(policy): \(g)") }
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }
}
