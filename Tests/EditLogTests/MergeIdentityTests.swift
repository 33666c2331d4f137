import EditLog
import Foundation
import Testing

/// Records, attachments and whole logs are told apart by their ids alone: records added on both sides stay linked, an
/// attachment id added on both is one attachment or refused, and a log imported whole equals its source.
@Suite struct MergeIdentityTests {
    /// An attachment GlobalID added on both sides: the same attachment (same feature, name and bytes) is one; another
    /// attachment under that id is refused by name, the log unchanged (before, a raw SQLite UNIQUE error).
    @Test func anAttachmentIdAddedOnBothSidesIsOneWhenTheSameAndRefusedOtherwise() throws {
        let id = "{ABCD0000-0000-4000-8000-00000000ABCD}"
        func attach(_ log: EditLog, _ tree: String, _ name: String, _ bytes: String, actor: String, minute: Int) throws {
            let lines = [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"\#(actor)-att","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#,
                         #"{"op":"attach","attachmentId":"\#(id)","name":"\#(name)","contentType":"image/jpeg","dataBase64":"\#(Data(bytes.utf8).base64EncodedString())","session":"\#(actor)-att"}"#,
                         #"{"op":"finish","session":"\#(actor)-att"}"#]
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
        }
        let (other, _) = try Fixture.treeWithInspections()
        for same in [true, false] {
            let ta = TempPath("a"), tb = TempPath("b")
            let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
            try attach(a, MergeDevices.tree, "photo.jpg", "the photo", actor: "ann", minute: 1)
            try attach(b, same ? MergeDevices.tree : other, same ? "photo.jpg" : "mine.jpg", same ? "the photo" : "another photo", actor: "bob", minute: 2)
            if same {
                try MergeDevices.exchange(a, into: b)
                try MergeDevices.exchange(b, into: a)
                for log in [a, b] {
                    #expect(try log.attachmentInfos(parents: [MergeDevices.tree])[MergeDevices.tree]?.map(\.globalId) == [id])
                    #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
                    #expect(try log.verify().ok)
                }
                #expect(try MergeDevices.differences([a, b]).isEmpty)
            } else {
                let n = try b.eventCount()
                let e = try #require(throws: EditLogError.self) { try MergeDevices.exchange(a, into: b) }
                #expect(e.kind == .invalidInput && e.message.contains(id) && e.message.contains("mine.jpg") && e.message.contains("photo.jpg"), "\(e)")
                #expect(try b.eventCount() == n)
            }
        }
    }

    @Test(arguments: [false, true])
    func treesWithInspectionsAndPhotosAddedOnBothSidesStayLinked(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        func addTree(_ log: EditLog, _ n: Int, actor: String) throws -> (tree: String, inspection: String, photo: String) {
            let tree = newGID(n), insp = newGID(n + 1), photo = newGID(n + 2)
            let lines = [
                #"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"\#(actor)-t","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                #"{"op":"attach","attachmentId":"\#(photo)","name":"tree-\#(actor).jpg","contentType":"image/jpeg","dataBase64":"\#(Data(actor.utf8).base64EncodedString())","session":"\#(actor)-t"}"#,
                #"{"op":"finish","session":"\#(actor)-t"}"#,
                #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"\#(actor)-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"}}"#,
                #"{"op":"finish","session":"\#(actor)-i"}"#,
            ]
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
            return (tree, insp, photo)
        }
        // Both devices number their new records the same way: only GlobalIDs tell them apart.
        let fromA = try addTree(a, 10, actor: "ann"), fromB = try addTree(b, 20, actor: "bob")
        if aFirst { try MergeDevices.exchange(a, into: b); try MergeDevices.exchange(b, into: a) } else { try MergeDevices.exchange(b, into: a); try MergeDevices.exchange(a, into: b) }
        for log in [a, b] {
            for side in [fromA, fromB] {
                #expect(try log.attributes(side.inspection)["TreeGlobalID"]?.stringValue == side.tree)
                let atts = try log.show(globalId: side.tree)["attachments"]?.arrayValue ?? []
                #expect(atts.compactMap { $0["attachmentId"]?.stringValue ?? $0["globalId"]?.stringValue } == [side.photo], "\(atts)")
                #expect(try log.attributes(side.tree)["Condition"] == "Poor")  // the rollup, derived again after the merge
            }
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    @Test func aWholeLogImportedIntoAnEmptyLogIsEqualAndASecondImportAddsNothing() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1)
        let bytes = try InputFiles.bytes(Paths.trees + "/scripts/01-new-plantings.ndjson")
        _ = try a.record(try ScriptParser.parse(bytes, defaultActor: "t", defaultDevice: "d"), name: "01", sha256: InputFiles.sha256(bytes))
        let b = try MergeDevices.device("b", tb, seed: 2, baseline: false)
        let count = Int(try a.eventCount())
        let first = try MergeDevices.exchange(a, into: b)
        #expect(first.imported == count && first.conflicts.isEmpty)
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
        let second = try MergeDevices.exchange(a, into: b)
        #expect(second.imported == 0 && second.alreadyPresent == count && second.decisions == 0 && second.derived == 0)
        #expect(try b.verify().ok)
    }

    /// A bundle that carries a conflict about a feature it also creates (made on A, edited on B and on C, merged on B)
    /// imports into an empty log as B holds it: the import's shortcuts for features it creates itself (no read of a
    /// feature whose every event came from one log) must leave such a feature to the merge. Debug builds check
    /// every shortcut against the whole merge; this is the case where they would differ.
    @Test func aBundleCarryingAConflictAboutAFeatureItCreatesImportsIntoAnEmptyLogAsItsExporterHoldsIt() throws {
        let ta = TempPath("a"), tb = TempPath("b"), tc = TempPath("c"), td = TempPath("d")
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        let a = try MergeDevices.device("a", ta, seed: 1, clock: clock), b = try MergeDevices.device("b", tb, seed: 2, clock: clock)
        let c = try MergeDevices.device("c", tc, seed: 3, clock: clock)
        let tree = newGID(40)
        let create = [#"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"ann-t","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                      #"{"op":"finish","session":"ann-t"}"#]
        for cmd in try script(create, actor: "ann") { try a.apply(cmd) }
        try MergeDevices.exchange(a, into: b)
        try MergeDevices.exchange(a, into: c)
        try MergeDevices.set(b, tree, [("SiteWidth", "10"), ("Wires", "1")], at: 1, actor: "bob", session: "bob-1")
        try MergeDevices.set(c, tree, [("SiteWidth", "20")], at: 5, actor: "cid", session: "cid-1")
        try MergeDevices.set(b, tree, [("Wires", "2")], at: 3, actor: "bob", session: "bob-2")
        let intoB = try MergeDevices.exchange(c, into: b)
        try #require(intoB.conflicts.map(\.field) == ["SiteWidth"], "B met C's edit as a conflict")

        let d = try MergeDevices.device("d", td, seed: 4, baseline: false, clock: clock)
        let intoD = try MergeDevices.exchange(b, into: d)
        #expect(intoD.conflicts.map(\.field) == ["SiteWidth"], "D meets the conflict B met")
        let t = try d.attributes(tree)
        #expect(t["SiteWidth"] == .double(20) || t["SiteWidth"] == .int(20), "the later write wins: \(String(describing: t["SiteWidth"]))")
        #expect(t["Wires"] == .double(2) || t["Wires"] == .int(2))
        #expect(try d.digestOfContent() == (try b.digestOfContent()))
        #expect(Set(try d.conflicts().map(\.conflict.key)) == Set(try b.conflicts().map(\.conflict.key)))
        #expect(try d.digestOfProjections() == (try d.digestOfRebuild()))
        #expect(try d.verify().ok)
    }
}
