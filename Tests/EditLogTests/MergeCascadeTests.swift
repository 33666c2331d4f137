import EditLog
import Foundation
import Testing

/// A delete's cascade follows its parent: whichever decision keeps or revives the parent keeps the children its delete
/// took along, a record deleted by itself stays deleted, and one that lived only by its old parent goes with it.
@Suite struct MergeCascadeTests {
    /// Device a deletes a tree with its inspections (the delete cascades, 10:01); device b edits the tree later
    /// (10:30). Whichever side's decision keeps the tree (b's kept update, a's revival) keeps its inspections: the
    /// cascade is part of the tree's delete, so it loses with it. Both exchange orders, every policy.
    @Test(arguments: MergePolicy.allCases, [false, true])
    func aKeptOrRevivedTreeKeepsTheInspectionsItsDeleteTookAlong(policy: MergePolicy, aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        #expect(inspections.count >= 2)
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        try MergeDevices.set(b, t, [("PlantedBy", "\"still here\"")], at: 30, actor: "bob", session: "bob-5")
        if aFirst { try MergeDevices.exchange(a, into: b, policy: policy); try MergeDevices.exchange(b, into: a, policy: policy) }
        else { try MergeDevices.exchange(b, into: a, policy: policy); try MergeDevices.exchange(a, into: b, policy: policy) }
        // The tree lives where the policy keeps the update: b (its own) under every policy but remote-wins; a (b's
        // later update) under last-in-wins and remote-wins.
        let lives: [(EditLog, Bool)] = [(a, policy == .lastInWins || policy == .remoteWins), (b, policy != .remoteWins)]
        for (log, live) in lives {
            let name = log === a ? "a" : "b"
            #expect(try log.show(globalId: t)["deleted"] == .bool(!live), "\(policy) \(name): the tree")
            for g in inspections {
                #expect(try log.show(globalId: g)["deleted"] == .bool(!live), "\(policy) \(name): inspection \(g) follows its tree")
            }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(policy) \(name)")
            #expect(try log.verify().ok, "\(policy) \(name)")
        }
        if policy == .lastInWins { #expect(try a.digestOfContent() == (try b.digestOfContent())) }
        // Each log's own decisions about the inspections name the tree they follow: b skips their cascaded deletes while
        // it keeps the tree; a revives them with the tree.
        for (log, decides) in [(a, policy == .lastInWins || policy == .remoteWins), (b, policy != .remoteWins)] {
            let followed = try log.events().filter {
                $0.type == EventType.mergeDecided.rawValue && $0.payload["log"]?.stringValue == log.logId && $0.payload["cascadeOf"]?.stringValue == t
            }
            #expect(Set(followed.compactMap { $0.payload["globalId"]?.stringValue }) == (decides ? Set(inspections) : []), "\(policy) \(log.logId)")
        }
    }

    /// Device a deletes one inspection by itself (10:00) and adds another under the tree (10:05); device b deletes the
    /// tree (10:30), its cascade reaching the first inspection too. The tree is kept for a's new inspection and the
    /// inspections b's cascade took come back, but not the one a deleted itself: in both logs, in both orders.
    @Test(arguments: [false, true])
    func aRecordDeletedByItselfStaysDeletedWhenACascadeThatReachedItIsUndone(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        let own = inspections[0]
        let insp = newGID(41)
        let lines = [
            #"{"op":"delete","layer":"Inspections","globalId":"\#(own)","at":"2026-06-20T10:00:00Z"}"#,
            #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"ann-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(t)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"},"at":"2026-06-20T10:05:00Z"}"#,
            #"{"op":"finish","session":"ann-i","at":"2026-06-20T10:05:30Z"}"#,
        ]
        for cmd in try script(lines, actor: "ann") { try a.apply(cmd) }
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:30:00Z"}"#], actor: "bob") { try b.apply(cmd) }
        for _ in 0..<2 {
            if aFirst { try MergeDevices.exchange(a, into: b); try MergeDevices.exchange(b, into: a) } else { try MergeDevices.exchange(b, into: a); try MergeDevices.exchange(a, into: b) }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false, "\(log.logId): the tree, kept for the new inspection")
            #expect(try log.show(globalId: own)["deleted"] == true, "\(log.logId): the inspection a deleted by itself")
            for g in inspections.dropFirst() + [insp] { #expect(try log.show(globalId: g)["deleted"] == false, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    /// Device a re-points inspection i (of tree w2) to tree w (10:01); device b, which has not seen it, deletes w2 (10:02),
    /// its cascade taking i; a edits w2 later (10:03). w2 lives (a's edit is later), so its cascade does not apply: i
    /// lives, under w, in both logs and both orders, although on b it pointed elsewhere by the time w2 came back.
    @Test(arguments: [false, true])
    func aRecordRepointedSinceComesBackWithTheParentWhoseCascadeTookIt(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let trees = try Fixture.treesWithInspections()
        let (w, _) = trees[0], (w2, others) = trees[1]
        let i = others[0]
        try MergeDevices.relate(a, i, to: w, at: 1, actor: "ann")
        try MergeDevices.delete(b, "Trees", w2, at: 2, actor: "bob")
        try MergeDevices.set(a, w2, [("SiteWidth", "7")], at: 3, actor: "ann", session: "ann-w2")
        for _ in 0..<2 {
            if aFirst { try MergeDevices.exchange(a, into: b); try MergeDevices.exchange(b, into: a) } else { try MergeDevices.exchange(b, into: a); try MergeDevices.exchange(a, into: b) }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: w2)["deleted"] == false, "\(log.logId): w2")
            #expect(try log.show(globalId: i)["deleted"] == false, "\(log.logId): i")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w, "\(log.logId): i under w")
            for g in others.dropFirst() { #expect(try log.show(globalId: g)["deleted"] == false, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try MergeDevices.differences([a, b])
        #expect(try a.digestOfContent() == (try b.digestOfContent()), "\(diff)")
    }

    /// Device b points inspection r of tree p at tree q (10:01); device a, which has not seen it, deletes p (10:02), its
    /// cascade taking r; b edits p (10:03), so p lives and r with it (under q). Then a deletes p again (10:04): r lives only
    /// because p did (its earlier cascade undone) and this delete's cascade does not reach it (it points at q), so a
    /// deletes it again as it records the delete, and b when it imports that delete. Both end with p and r deleted.
    @Test(arguments: [false, true])
    func aRecordLivingOnlyByItsOldParentGoesWhenTheParentIsDeletedAgain(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        let trees = try Fixture.treesWithInspections()
        let (p, inspections) = trees[0], q = trees[1].tree
        let r = inspections[0]
        try MergeDevices.relate(b, r, to: q, at: 1, actor: "bob")
        try MergeDevices.delete(a, "Trees", p, at: 2, actor: "ann")
        try MergeDevices.set(b, p, [("SiteWidth", "7")], at: 3, actor: "bob", session: "bob-p")
        if aFirst { try MergeDevices.exchange(a, into: b); try MergeDevices.exchange(b, into: a) } else { try MergeDevices.exchange(b, into: a); try MergeDevices.exchange(a, into: b) }
        for log in [a, b] {
            #expect(try log.show(globalId: p)["deleted"] == false, "\(log.logId): p, edited after its delete")
            #expect(try log.show(globalId: r)["deleted"] == false, "\(log.logId): r, its cascade undone")
            #expect(try log.attributes(r)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == q)
        }
        // b skipped a's delete of p (b's edit is later): a diff over that delete applies the decision, whether the window
        // holds the decision too or starts between it and the delete.
        let skip = try #require(try b.events().first {
            $0.type == EventType.mergeDecided.rawValue && $0.payload["log"]?.stringValue == b.logId && $0.payload["globalId"]?.stringValue == p
                && $0.payload["skipDelete"] == true
        })
        for from in [skip.position - 1, skip.position] {
            let window = try b.diff(from: .position(from), to: .position(skip.position + 1))
            #expect(window.events >= 1 && !window.changes.contains { $0.globalId == p && $0.kind == .deleted }, "from \(from): \(window.changes.map(\.globalId))")
        }
        let before = try a.lastPosition()
        try MergeDevices.delete(a, "Trees", p, at: 4, actor: "ann")
        let again = try a.events(after: before).filter { $0.type == EventType.mergeDecided.rawValue }
        #expect(again.map { $0.payload["globalId"]?.stringValue } == [r] && again.allSatisfy { $0.payload["deleteAgain"] == true && $0.payload["cascadeOf"]?.stringValue == p },
                "\(again.map { $0.payload.serialized() })")
        try MergeDevices.exchange(a, into: b)
        try MergeDevices.exchange(b, into: a)
        for log in [a, b] {
            #expect(try log.show(globalId: p)["deleted"] == true, "\(log.logId): p")
            for g in inspections { #expect(try log.show(globalId: g)["deleted"] == true, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try MergeDevices.differences([a, b])
        #expect(try a.digestOfContent() == (try b.digestOfContent()), "\(diff)")
        // A log that held nothing, given all of it at once, meets the same deletes (its import deletes r again too).
        let tc = TempPath("c")
        let c = try MergeDevices.device("c", tc, seed: 3, baseline: false)
        try MergeDevices.exchange(a, into: c)
        #expect(try c.show(globalId: r)["deleted"] == true)
        let diffC = try MergeDevices.differences([a, c])
        #expect(try c.digestOfContent() == (try a.digestOfContent()), "\(diffC)")
    }
}
