import EditLog
import EditLogSync
import Foundation
import Synchronization
import Testing

/// `editlog sync` between a device log and a hub log served by `editlog serve`'s application on 127.0.0.1.
@Suite(.serialized) struct SyncTests {
    // MARK: Both ways, concurrent edits, last-in-wins

    @Test func deviceAndHubConvergeUnderLastInWinsWithTreesInspectionsAndPhotosOnBothSides() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let t2 = try #require(try Fixture.globalIds("Trees").first { $0 != SyncRig.tree1 })
        // The device: an early SiteWidth and a late PlantedBy (both win: the device's upload is the last in,
        // whatever the clocks), a new tree with an inspection and photos. The hub (its edits stamped with its clock,
        // 2026-05-28): the same two fields, a field only it changes, its own tree with an inspection and photos
        // (numbered the same way: only GlobalIDs differ).
        try SyncRig.set(device.value, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
        try SyncRig.set(device.value, SyncRig.tree1, [("PlantedBy", "\"crew D\"")], at: "2026-07-01T10:00:00Z", actor: "dana", session: "d-2")
        let fromDevice = try SyncRig.addTree(device.value, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
        try SyncRig.set(hub.value, SyncRig.tree1, [("SiteWidth", "20"), ("PlantedBy", "\"crew H\"")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-1")
        try SyncRig.set(hub.value, t2, [("SiteType", "\"Park\"")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-2")
        let fromHub = try SyncRig.addTree(hub.value, 200, actor: "hank", at: "2026-06-01T11:00:00Z")

        try await SyncRig.serve(hub.value) { url in
            let counting = FlakyTransport { _, _ in nil }
            let first = try await SyncRig.sync(device.value, url, transport: counting)
            #expect(first.mode == "extractChanges")
            // One service-level applyEdits for the trees, inspections and photos: one transaction on the service.
            #expect(counting.count("applyEdits") == 1)
            #expect(Set(first.pulled.map(\.globalId)).isSuperset(of: [SyncRig.tree1, t2, fromHub.tree, fromHub.inspection]), "\(first.pulled)")
            #expect(first.pulledAttachments == 2)
            #expect(Set(first.pushed.map(\.globalId)).isSuperset(of: [SyncRig.tree1, fromDevice.tree, fromDevice.inspection, fromDevice.photo, fromDevice.inspectionPhoto]), "\(first.pushed)")
            #expect(first.pushedAttachments == 2)
            // Parents before children: the device's tree is added before its inspection.
            let order = first.pushed.map(\.globalId)
            #expect(order.firstIndex(of: fromDevice.tree)! < order.firstIndex(of: fromDevice.inspection)!)
            // A second sync with nothing new writes nothing on either side.
            let hubHead = try hub.value.lastPosition(), deviceHead = try device.value.lastPosition()
            let second = try await SyncRig.sync(device.value, url)
            #expect(second.pulled.isEmpty && second.pushed.isEmpty && second.eventsWritten == 0, "\(second.json.serialized())")
            #expect(try hub.value.lastPosition() == hubHead)
            #expect(try device.value.lastPosition() == deviceHead)
        }

        // Converged: every live feature, attribute (editor tracking aside), geometry and attachment by GlobalID.
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        // The syncing device's writes won each field, on both sides.
        for log in [device.value, hub.value] {
            let t = try log.attributes(SyncRig.tree1)
            #expect(t["SiteWidth"]?.doubleValue == 10)
            #expect(t["PlantedBy"] == "crew D")
            #expect(try log.attributes(t2)["SiteType"] == "Park")
            // No mislinked record: each inspection under its own tree, each photo on its own record, rollups derived.
            for side in [fromDevice, fromHub] {
                #expect(try log.attributes(side.inspection)["TreeGlobalID"]?.stringValue == side.tree)
                #expect(try log.attachmentSnapshots(of: side.tree).map(\.globalId) == [side.photo])
                #expect(try log.attachmentSnapshots(of: side.inspection).map(\.globalId) == [side.inspectionPhoto])
                #expect(try log.attributes(side.tree)["Condition"] == "Poor")
            }
            #expect(try log.verify().ok)
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        // Every conflict is in `conflicts`, with base, both sides, who wrote each and the policy.
        let conflicts = try device.value.conflicts()
        let siteWidth = try #require(conflicts.first { $0.conflict.field == "SiteWidth" && $0.conflict.globalId == SyncRig.tree1 })
        #expect(siteWidth.conflict.winner == .local && siteWidth.conflict.policy == .lastInWins && siteWidth.conflict.rule == .upload)
        #expect(siteWidth.conflict.remote.writer?.actor == "hank" && siteWidth.conflict.local.writer?.actor == "dana")
        #expect(siteWidth.conflict.remote.value.doubleValue == 20 && siteWidth.conflict.local.value.doubleValue == 10)
        let plantedBy = try #require(conflicts.first { $0.conflict.field == "PlantedBy" && $0.conflict.globalId == SyncRig.tree1 })
        #expect(plantedBy.conflict.winner == .local)
        // Pulled changes are sync-pull sessions by the service's editor; pushed ones are the hub's sessions of the token's user.
        let pulled = try device.value.history(globalId: t2).entries.filter { $0.field == "SiteType" }.last
        #expect(pulled?.actor == "hank" && pulled?.cause == Cause.syncPull, "\(String(describing: pulled))")
        let pushed = try hub.value.history(globalId: SyncRig.tree1).entries.filter { $0.field == "PlantedBy" }.last
        #expect(pushed?.actor == SyncRig.hubUser)
        // The sync state is events of the log, and every event validates against schemas/.
        var types: [String] = []
        _ = try device.value.events(LogFilter()) { e in
            if e.stream == StreamName.sync { types.append(e.type) }
        }
        #expect(types == ["SyncPulled", "SyncPushed"])
        try Self.validateEvents(device.value)
    }

    static func validateEvents(_ log: EditLog) throws {
        let v = SchemaFilesTests.validator()
        var failures: [String] = []
        _ = try log.events(LogFilter()) { e in
            let errors = try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
            if !errors.isEmpty, failures.count < 10 { failures.append("\(e.position) \(e.type): \(errors)") }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    // MARK: Deletes both ways

    @Test func deletesTravelBothWaysByGlobalIdAndAnUpdateAgainstADeleteIsAConflict() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let (parent, inspections) = try Fixture.treeWithInspections()
        let loner = try Fixture.treeWithoutInspections()
        let others = try Fixture.globalIds("Trees").filter { ![parent, loner, SyncRig.tree1].contains($0) }
        try await SyncRig.serve(hub.value) { url in
            // A first sync: the service's ObjectIDs are known from here on (deletes come by ObjectID).
            _ = try await SyncRig.sync(device.value, url)
            // The hub deletes a tree with inspections (a composite cascade) and one the device edits meanwhile;
            // the device deletes a lone tree.
            try hub.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(parent)","actor":"hank"}"#)
            try hub.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(others[0])","actor":"hank"}"#)
            try SyncRig.set(device.value, others[0], [("PlantedBy", "\"crew D\"")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
            try device.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(loner)","actor":"dana"}"#)
            // In windows of 3 server generations: the cascade's deletes and the changes spread over several answers.
            let r = try await SyncRig.sync(device.value, url, generationWindow: 3)
            // The two trees and their inspections (the cascade), each named by the service's ObjectID, mapped to its GlobalID.
            #expect(Set(r.pulled.filter { $0.kind == "delete" }.map(\.globalId)).isSuperset(of: [parent, others[0]] + inspections), "\(r.pulled)")
            #expect(r.pushed.contains { $0.globalId == loner && $0.kind == "delete" }, "\(r.pushed)")
            #expect(r.conflicts.contains { $0.kind == .updateDelete && $0.globalId == others[0] && $0.winner == .remote }, "\(r.conflicts)")
            let again = try await SyncRig.sync(device.value, url)
            #expect(again.eventsWritten == 0, "\(again.json.serialized())")
        }
        for log in [device.value, hub.value] {
            for g in [parent, loner, others[0]] + inspections { #expect(try log.snapshot(layer: g == parent || g == loner || g == others[0] ? 0 : 3, globalId: g)?.deleted == true, "\(g)") }
        }
        #expect(try device.value.conflicts().contains { $0.conflict.kind == .updateDelete })
        #expect(try SyncRig.userState(device.value) == (try SyncRig.userState(hub.value)))
    }

    /// A pull in windows of generations commits each window's changes as it arrives; only the last window's
    /// `SyncPulled` records the generation reached (with every window's deletes). A run stopped between windows
    /// leaves the windows it committed and the old generation: the next run pulls them again as echoes (no
    /// second session for any change) and finishes the rest.
    @Test func aPullInWindowsCommitsEachWindowAndARunStoppedBetweenThemIsFinishedWithoutDuplicates() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let (parent, inspections) = try Fixture.treeWithInspections()
        let trees = Array(try Fixture.globalIds("Trees").filter { $0 != parent }.prefix(6))
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            let gen = { () throws -> Int64? in
                try device.value.streamEvents(StreamName.sync).compactMap { $0.payload["serverGen"]?.intValue }.last
            }
            let before = try gen()
            for (i, g) in trees.enumerated() {
                try SyncRig.set(hub.value, g, [("PlantedBy", "\"crew \(i)\"")], at: "2026-06-0\(i + 1)T10:00:00Z", actor: "hank", session: "h-\(i)")
            }
            try hub.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(parent)","actor":"hank"}"#)
            // Stopped after the second window's commit.
            let windows = Mutex(0)
            let stop: @Sendable (String) throws -> Void = { name in
                guard name == "pulled-window", windows.withLock({ n in n += 1; return n == 2 }) else { return }
                throw EditLogError(.io, "stopped between windows")
            }
            await #expect(throws: EditLogError.self) { _ = try await SyncRig.sync(device.value, url, failpoint: stop, generationWindow: 2) }
            let partial = try device.value.streamEvents(StreamName.sync).filter { $0.payload["partial"] == .bool(true) }
            // A window with nothing new (say, only a session's start) writes nothing: at most one event per window.
            #expect((1...2).contains(partial.count), "\(partial.map(\.payload))")
            #expect(partial.allSatisfy { $0.payload["serverGen"] == .null && $0.payload["windowServerGen"]?.intValue != nil })
            #expect(try gen() == before, "a stopped pull records no generation")
            let committed = try trees.filter { try device.value.attributes($0)["PlantedBy"] != nil && device.value.attributes($0)["PlantedBy"] == hub.value.attributes($0)["PlantedBy"] }
            #expect(!committed.isEmpty && committed.count < trees.count, "some windows were committed, not all: \(committed.count)")
            let r = try await SyncRig.sync(device.value, url, generationWindow: 2)
            #expect(r.pulled.filter { $0.kind == "delete" }.count == 1 + inspections.count, "\(r.pulled)")
            #expect(try gen().map { $0 > (before ?? 0) } == true)
            let again = try await SyncRig.sync(device.value, url)
            #expect(again.eventsWritten == 0, "\(again.json.serialized())")
            // One tree changed in sessions one after another: listed, each time with its last state, by consecutive
            // windows. A window's sessions are built while the one before imports (here: before it, always); that
            // import touched the tree, so its session is built again after it (an echo then: no second session).
            for k in 0..<3 {
                try SyncRig.set(hub.value, trees[1], [("PlantedBy", "\"crew y\(k)\"")], at: "2026-07-0\(k + 1)T10:00:00Z", actor: "hank", session: "h-y\(k)")
            }
            let consecutive = try await SyncRig.sync(device.value, url, generationWindow: 4, buildNextWindowFirst: true)
            #expect(consecutive.pulled.filter { $0.globalId == trees[1] }.count == 1, "\(consecutive.pulled)")
        }
        // Each hub change arrived once: one sync-pull session per tree and round.
        for g in trees {
            let pulled = try device.value.streamEvents(StreamName.feature(layer: 0, globalId: g))
                .filter { $0.cause == Cause.syncPull && $0.type == EventType.sessionCommitted.rawValue }
            #expect(pulled.count == (g == trees[1] ? 2 : 1), "\(g): \(pulled.count) sync-pull sessions")
        }
        #expect(try device.value.attributes(trees[1])["PlantedBy"] == .string("crew y2"))
        #expect(try device.value.snapshot(layer: 0, globalId: parent)?.deleted == true)
        for g in inspections { #expect(try device.value.snapshot(layer: 3, globalId: g)?.deleted == true) }
        #expect(try SyncRig.userState(device.value) == (try SyncRig.userState(hub.value)))
    }

    /// Another client edits a feature on the service after this sync pulled and before it pushes its own edit of
    /// that feature. The push must not overwrite it unseen: the sync pulls again, the merge records the conflict,
    /// and both sides end with the policy's winner (under last-in-wins, the device's upload: it is the last in).
    @Test func aServiceEditBetweenPullAndPushIsPulledAndMergedNotOverwritten() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let tree = try Fixture.treeWithoutInspections()
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            try SyncRig.set(device.value, tree, [("PlantedBy", "\"crew D\"")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
            let edited = Mutex(false)
            let late: @Sendable (String) throws -> Void = { name in
                guard name == "pulled", edited.withLock({ done in defer { done = true }; return !done }) else { return }
                try SyncRig.set(hub.value, tree, [("PlantedBy", "\"crew H\"")], at: "2026-07-01T10:00:00Z", actor: "hank", session: "h-late")
            }
            let r = try await SyncRig.sync(device.value, url, failpoint: late)
            #expect(r.repulls == 1, "\(r.json.serialized())")
            let c = try #require(r.conflicts.first { $0.globalId == tree && $0.field == "PlantedBy" }, "\(r.conflicts)")
            #expect(c.local.value == .string("crew D") && c.remote.value == .string("crew H"))
            #expect(c.winner == .local && c.rule == .upload, "the syncing device's upload is the last in under last-in-wins")
            #expect(r.pushed.contains { $0.globalId == tree }, "\(r.pushed)")
            let again = try await SyncRig.sync(device.value, url)
            #expect(again.eventsWritten == 0 && again.pushed.isEmpty && again.repulls == 0, "\(again.json.serialized())")
        }
        for log in [hub.value, device.value] { #expect(try log.attributes(tree)["PlantedBy"] == .string("crew D")) }
        #expect(try device.value.conflicts().contains { $0.conflict.globalId == tree && $0.conflict.field == "PlantedBy" })
    }

    // MARK: Attachment renames and removals

    static func run(_ log: EditLog, actor: String, _ lines: [String]) throws { for c in try script(lines, actor: actor) { _ = try log.apply(c) } }

    static func rename(_ log: EditLog, layer: String, _ parent: String, _ id: String, _ name: String, actor: String, at: String, session: String) throws {
        try run(log, actor: actor, [#"{"op":"edit","layer":"\#(layer)","globalId":"\#(parent)","session":"\#(session)","at":"\#(at)"}"#,
                                    #"{"op":"renameAttachment","attachmentId":"\#(id)","name":"\#(name)","session":"\#(session)","at":"\#(at)"}"#,
                                    #"{"op":"finish","session":"\#(session)","at":"\#(at)"}"#])
    }

    @Test func attachmentRenamesAndRemovalsTravelBothWays() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let fromDevice = try SyncRig.addTree(device.value, 100, actor: "dana", at: "2026-05-01T10:00:00Z")
        let fromHub = try SyncRig.addTree(hub.value, 200, actor: "hank", at: "2026-05-01T11:00:00Z")
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            // The device renames its tree's photo; the hub renames the device's inspection photo, removes its own
            // tree's photo, and both rename the hub's inspection photo (the device later: it wins).
            try Self.rename(device.value, layer: "Trees", fromDevice.tree, fromDevice.photo, "tree-north.jpg", actor: "dana", at: "2026-06-05T10:00:00Z", session: "d-r1")
            try Self.rename(hub.value, layer: "Inspections", fromDevice.inspection, fromDevice.inspectionPhoto, "inspection-checked.jpg", actor: "hank", at: "2026-06-06T10:00:00Z", session: "h-r1")
            try Self.run(hub.value, actor: "hank", [#"{"op":"edit","layer":"Trees","globalId":"\#(fromHub.tree)","session":"h-d1","at":"2026-06-06T10:00:00Z"}"#,
                                               #"{"op":"detach","attachmentId":"\#(fromHub.photo)","session":"h-d1"}"#,
                                               #"{"op":"finish","session":"h-d1","at":"2026-06-06T10:00:00Z"}"#])
            try Self.rename(hub.value, layer: "Inspections", fromHub.inspection, fromHub.inspectionPhoto, "insp-H.jpg", actor: "hank", at: "2026-06-07T10:00:00Z", session: "h-r2")
            try Self.rename(device.value, layer: "Inspections", fromHub.inspection, fromHub.inspectionPhoto, "insp-D.jpg", actor: "dana", at: "2099-01-01T10:00:00Z", session: "d-r2")
            let r = try await SyncRig.sync(device.value, url)
            #expect(r.pushed.contains { $0.globalId == fromDevice.photo && $0.kind == "rename" }, "\(r.json.serialized())")
            #expect(r.pushed.contains { $0.globalId == fromHub.inspectionPhoto && $0.kind == "rename" }, "\(r.json.serialized())")
            let again = try await SyncRig.sync(device.value, url)
            #expect(again.pulled.isEmpty && again.pushed.isEmpty && again.eventsWritten == 0, "\(again.json.serialized())")
        }
        for log in [device.value, hub.value] {
            #expect(try log.attachmentSnapshots(of: fromDevice.tree).map(\.name) == ["tree-north.jpg"])
            #expect(try log.attachmentSnapshots(of: fromDevice.inspection).map(\.name) == ["inspection-checked.jpg"])
            #expect(try log.attachmentSnapshots(of: fromHub.tree).isEmpty)
            #expect(try log.attachmentSnapshots(of: fromHub.inspection).map(\.name) == ["insp-D.jpg"])
            #expect(try log.attachmentSnapshots(of: fromHub.inspection).map(\.globalId) == [fromHub.inspectionPhoto])
            #expect(try log.verify().ok)
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        // Both renamed the same photo: a conflict in `conflicts`, base, both names and the later writer's win.
        let c = try #require(try device.value.conflicts().first { $0.conflict.kind == .renameRename }?.conflict)
        #expect(c.attachmentId == fromHub.inspectionPhoto && c.winner == .local)
        #expect(c.local.value == .string("insp-D.jpg") && c.remote.value == .string("insp-H.jpg"))
        try Self.validateEvents(device.value)
    }

    // MARK: Without change tracking

    @Test func aServiceWithoutChangeTrackingIsPulledByItsEditDateField() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let fromDevice = try SyncRig.addTree(device.value, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
        try await SyncRig.serve(hub.value) { url in
            let first = try await SyncRig.sync(device.value, url, transport: NoChangeTrackingTransport())
            #expect(first.mode == "query")
            #expect(first.pushed.contains { $0.globalId == fromDevice.tree })
            let fromHub = try SyncRig.addTree(hub.value, 200, actor: "hank", at: "2026-06-01T11:00:00Z")
            try SyncRig.set(hub.value, SyncRig.tree1, [("PlantedBy", "\"crew H\"")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-1")
            let second = try await SyncRig.sync(device.value, url, transport: NoChangeTrackingTransport())
            #expect(Set(second.pulled.map(\.globalId)).isSuperset(of: [fromHub.tree, fromHub.inspection, SyncRig.tree1]), "\(second.pulled)")
            let third = try await SyncRig.sync(device.value, url, transport: NoChangeTrackingTransport())
            #expect(third.eventsWritten == 0 && third.pulled.isEmpty, "\(third.json.serialized())")
        }
        #expect(try SyncRig.userState(device.value) == (try SyncRig.userState(hub.value)))
    }

    // MARK: manual

    @Test func manualLeavesConflictsOpenAndSyncsEverythingElse() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let trees = try Fixture.globalIds("Trees").filter { $0 != SyncRig.tree1 }
        try SyncRig.set(device.value, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-07-01T10:00:00Z", actor: "dana", session: "d-1")
        try SyncRig.set(device.value, trees[0], [("PlantedBy", "\"crew D\"")], at: "2026-07-01T10:00:00Z", actor: "dana", session: "d-2")
        try SyncRig.set(hub.value, SyncRig.tree1, [("SiteWidth", "20")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-1")
        try SyncRig.set(hub.value, trees[1], [("PlantedBy", "\"crew H\"")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-2")
        try await SyncRig.serve(hub.value) { url in
            let r = try await SyncRig.sync(device.value, url, policy: .manual)
            #expect(r.conflicts.count == 1 && r.conflicts.first?.winner == .open, "\(r.conflicts)")
            let open = try device.value.conflicts().filter { $0.status == "open" }
            #expect(open.count == 1 && open.first?.conflict.field == "SiteWidth")
            // The conflict stays as it is on both sides; everything else synced both ways.
            #expect(try device.value.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 10)
            #expect(try hub.value.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 20)
            #expect(try hub.value.attributes(trees[0])["PlantedBy"] == "crew D")
            #expect(try device.value.attributes(trees[1])["PlantedBy"] == "crew H")
            // Syncing again changes nothing while it is open.
            let again = try await SyncRig.sync(device.value, url, policy: .manual)
            #expect(again.eventsWritten == 0 && again.pushed.isEmpty && again.pulled.isEmpty, "\(again.json.serialized())")
            #expect(try device.value.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 10)
            // Resolved by hand (take the local value): the next sync pushes it.
            let id = try #require(open.first?.conflict.id)
            _ = try device.value.resolveConflict(id: id, take: .local, actor: "dana", device: "test")
            let third = try await SyncRig.sync(device.value, url, policy: .manual)
            #expect(third.pushed.contains { $0.globalId == SyncRig.tree1 && $0.fields == ["SiteWidth"] }, "\(third.pushed)")
            #expect(try hub.value.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 10)
        }
        #expect(try SyncRig.userState(device.value) == (try SyncRig.userState(hub.value)))
    }

    // MARK: Interrupted anywhere

    /// Every step a sync can be interrupted at, in process: a failpoint's error; a connection dropped before a
    /// request, an answer lost after the service applied it, a 500 (`mode-endpoint-n`: the n-th call to it).
    /// The next run finishes the work: both sides converge with no duplicate.
    @Test(arguments: ["pulled", "pushed-request-1", "pushed-request-2", "before-record",
                      "lost-applyEdits-1", "lost-applyEdits-2", "drop-applyEdits-2", "500-applyEdits-1",
                      "lost-extractChanges-2", "lost-extractChanges-3", "drop-queryAttachments-1", "lost-query-1"])
    func anInterruptedSyncIsFinishedByTheNextWithoutDuplicates(point: String) async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        try Self.concurrentEdits(hub: hub.value, device: device.value)
        try await SyncRig.serve(hub.value) { url in
            let parts = point.split(separator: "-")
            var transport: any ServiceTransport = HTTPTransport()
            var failpoint: (@Sendable (String) throws -> Void)? = nil
            if parts.count == 3, let n = Int(parts[2]), ["lost", "drop", "500"].contains(String(parts[0])) {
                let mode: FlakyTransport.Failure = parts[0] == "lost" ? .lostResponse : parts[0] == "drop" ? .drop : .status500
                let endpoint = String(parts[1])
                transport = FlakyTransport { e, call in e == endpoint && call == n ? mode : nil }
            } else {
                failpoint = { name in if name == point { throw EditLogError(.io, "interrupted at \(name)") } }
            }
            do {
                _ = try await SyncRig.sync(device.value, url, transport: transport, failpoint: failpoint)
                Issue.record("the sync was not interrupted at \(point)")
            } catch {}
            _ = try await SyncRig.sync(device.value, url)
            let again = try await SyncRig.sync(device.value, url)
            #expect(again.eventsWritten == 0 && again.pushed.isEmpty, "\(again.json.serialized())")
        }
        try Self.expectConverged(hub: hub.value, device: device.value)
    }

    static func concurrentEdits(hub: EditLog, device: EditLog) throws {
        try SyncRig.set(device, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
        _ = try SyncRig.addTree(device, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
        _ = try SyncRig.addTree(device, 110, actor: "dana", at: "2026-06-02T11:00:00Z")
        // A delete too: the push is then two requests (adds and updates, then deletes), each every layer at once.
        try device.run(#"{"op":"delete","layer":"Trees","globalId":"\#(try Fixture.treeWithoutInspections())","actor":"dana"}"#)
        try SyncRig.set(hub, SyncRig.tree1, [("SiteWidth", "20")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-1")
        _ = try SyncRig.addTree(hub, 200, actor: "hank", at: "2026-06-01T11:00:00Z")
    }

    static func expectConverged(hub: EditLog, device: EditLog) throws {
        let a = try SyncRig.userState(device), b = try SyncRig.userState(hub)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        for log in [hub, device] {
            // No duplicate: each added record (and each photo) exactly once, live.
            for n in [100, 110, 200] {
                let tree = newGID(n)
                #expect(try log.attachmentSnapshots(of: tree, includeDeleted: true).count == 1)
                #expect(try log.attachmentSnapshots(of: newGID(n + 1), includeDeleted: true).count == 1)
                #expect(try log.attributes(newGID(n + 1))["TreeGlobalID"]?.stringValue == tree)
            }
            let creates = try log.allFeatures(layer: 0).filter { [newGID(100), newGID(110), newGID(200)].contains($0.globalId) }
            #expect(creates.count == 3 && creates.allSatisfy { !$0.deleted })
            #expect(try log.snapshot(layer: 0, globalId: try Fixture.treeWithoutInspections())?.deleted == true)
            #expect(try log.verify().ok)
        }
    }
}

struct SyncRNG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct CLIOutcome: Sendable { var status: Int32; var killed: Bool; var stdout: String; var stderr: String }

/// Runs the editlog binary off the cooperative pool (the in-process server keeps answering meanwhile).
func runCLI(_ args: [String], env: [String: String] = [:], stdin: String? = nil) async throws -> CLIOutcome {
    try await withCheckedThrowingContinuation { c in
        DispatchQueue.global().async {
            do {
                let (p, out, err) = try CLI.start(args, env: env, stdin: stdin)
                let o = out.fileHandleForReading.readDataToEndOfFile()
                let e = err.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                c.resume(returning: CLIOutcome(status: p.terminationStatus, killed: p.terminationReason == .uncaughtSignal,
                                               stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self)))
            } catch {
                c.resume(throwing: error)
            }
        }
    }
}

extension SyncTests {
    @Suite(.tags(.process)) struct ProcessTests {
        // MARK: --dry-run

        @Test func dryRunPrintsThePlanAndWritesNothing() async throws {
            let th = TempPath("hub"), td = TempPath("device")
            let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
            defer { hub.value.close() }
            try SyncRig.set(device.value, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
            let fromDevice = try SyncRig.addTree(device.value, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
            try SyncRig.set(hub.value, SyncRig.tree1, [("SiteWidth", "20")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-1")
            let fromHub = try SyncRig.addTree(hub.value, 200, actor: "hank", at: "2026-06-01T11:00:00Z")
            device.value.close()
            func bytes() -> [Data] { ["", "-wal"].map { FileManager.default.contents(atPath: td.path + $0) ?? Data() } }
            let before = bytes()
            let path = td.path
            try await SyncRig.serve(hub.value) { url in
                let hubHead = try hub.value.lastPosition()
                let client = try FeatureServiceClient(url: url, token: SyncRig.token)
                let plan = try await SyncEngine.plan(logAt: path, client: client, options: SyncOptions(policy: .lastInWins))
                #expect(plan.dryRun && plan.eventsWritten == 0)
                #expect(plan.pulled.contains { $0.globalId == fromHub.tree && $0.kind == "add" })
                #expect(plan.pushed.contains { $0.globalId == fromDevice.tree && $0.kind == "add" })
                #expect(plan.conflicts.contains { $0.field == "SiteWidth" && $0.winner == .local && $0.rule == .upload })
                #expect(try hub.value.lastPosition() == hubHead, "a dry run sends no edit")
                // The CLI prints the same plan.
                let r = try await runCLI(["sync", path, "--service", url, "--token", SyncRig.token, "--dry-run", "--json"])
                #expect(r.status == 0, "\(r.stderr)")
                let j = try JSONParser.parse(r.stdout)
                #expect(j["dryRun"] == true && (j["pushed"]?.arrayValue?.count ?? 0) == plan.pushed.count)
            }
            #expect(bytes() == before, "the log's file and WAL are byte for byte as before")
        }

        // MARK: Bad input

        @Test func badInputIsAClearErrorAndWritesNothing() async throws {
            let th = TempPath("hub"), td = TempPath("device"), tm = TempPath("mismatch")
            let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
            defer { hub.value.close(); device.value.close() }
            // A log whose Trees.PlantedBy is an integer where the service has a string (a field a service removed is
            // followed, SyncSchemaChangeTests; a type that differs cannot be).
            var edits = try ServiceEdits.trees()
            edits.field("Trees", "PlantedBy") { $0["type"] = "esriFieldTypeInteger"; $0["length"] = nil }
            let service = JSONValue.object(edits.doc)
            let mismatch = Unchecked(try EditLog.create(at: tm.path, service: [("service.json", service)], webmap: try Fixture.json("webmap.json"),
                                                        rules: try InputFiles.rules(Paths.trees + "/rules.json")))
            defer { mismatch.value.close() }
            let hubPath = th.path, devicePath = td.path
            try await SyncRig.serve(hub.value) { url in
                let head = try device.value.lastPosition(), hubHead = try hub.value.lastPosition()
                func expectError(_ kind: EditLogError.Kind, _ words: String, log: EditLog? = nil, _ run: () async throws -> Void) async {
                    do {
                        try await run()
                        Issue.record("expected \(kind) (\(words))")
                    } catch let e as EditLogError {
                        #expect(e.kind == kind, "\(e)")
                        #expect(e.description.lowercased().contains(words.lowercased()), "\(e)")
                    } catch {
                        Issue.record("not an EditLogError: \(error)")
                    }
                }
                // Unreachable: nothing listens on port 9 of 127.0.0.1.
                await expectError(.io, "cannot reach") { _ = try await SyncRig.sync(device.value, "http://127.0.0.1:9/arcgis/rest/services/Trees/FeatureServer") }
                await expectError(.invalidInput, "FeatureServer") { _ = try await SyncRig.sync(device.value, "http://127.0.0.1:9/arcgis/rest/services/Trees/MapServer") }
                // An answer that is not a FeatureServer's.
                let other = url.replacingOccurrences(of: "/Trees/FeatureServer", with: "/Nothing/FeatureServer")
                await expectError(.invalidInput, "refused") { _ = try await SyncRig.sync(device.value, other) }
                await expectError(.invalidInput, "token") { _ = try await SyncRig.sync(device.value, url, token: "tok-wrong") }
                // The message names the field and the change, and says sync stopped before it pulled.
                await expectError(.invalidInput, "stopped before pulling and wrote nothing: field Trees.PlantedBy: type esriFieldTypeInteger → esriFieldTypeString") {
                    _ = try await SyncRig.sync(mismatch.value, url)
                }
                // A server 500 on the first request.
                let flaky = FlakyTransport { _, n in n == 1 ? .status500 : nil }
                await expectError(.io, "500") { _ = try await SyncRig.sync(device.value, url, transport: flaky) }
                #expect(try device.value.lastPosition() == head)
                #expect(try hub.value.lastPosition() == hubHead)
                // The CLI: a clear message and a non-zero exit code.
                let r = try await runCLI(["sync", hubPath + ".nope", "--service", url, "--token", SyncRig.token])
                #expect(r.status == 68, "\(r.stderr)")
                let t = try await runCLI(["sync", devicePath, "--service", url, "--token", "tok-wrong"])
                #expect(t.status == 65 && t.stderr.contains("token"), "\(t.stderr)")
                let both = try await runCLI(["sync", devicePath, "--service", url, "--token", "a", "--token-file", "b"])
                #expect(both.status == 64 && both.stderr.contains("--token-file"), "\(both.stderr)")
            }
            #expect(try mismatch.value.eventCount() == 1)
        }

        /// The CLI killed (SIGKILL) at points chosen by a seeded generator, then run again: it converges.
        @Test func theSyncCommandKilledAtRandomPointsConvergesWhenRunAgain() async throws {
            let points = ["pulled", "pushed-request-1", "pushed-request-2", "before-record"]
            var rng = SyncRNG(seed: 2026)
            for round in 0..<3 {
                let point = points[Int(rng.next() % UInt64(points.count))]
                let th = TempPath("hub"), td = TempPath("device")
                let hub = Unchecked(try SyncRig.hub(th))
                defer { hub.value.close() }
                do {
                    let device = try SyncRig.device(td)
                    try SyncTests.concurrentEdits(hub: hub.value, device: device)
                    device.close()
                }
                let path = td.path
                try await SyncRig.serve(hub.value) { url in
                    let killed = try await runCLI(["sync", path, "--service", url, "--token", SyncRig.token], env: ["EDITLOG_SYNC_KILL_AT": point])
                    #expect(killed.status == 9 && killed.killed, "round \(round) at \(point): \(killed.status) \(killed.stderr)")
                    let r = try await runCLI(["sync", path, "--service", url, "--token", SyncRig.token, "--json"])
                    #expect(r.status == 0, "\(r.stderr)")
                    let again = try await runCLI(["sync", path, "--service", url, "--token", SyncRig.token, "--json"])
                    #expect(try JSONParser.parse(again.stdout)["eventsWritten"]?.intValue == 0, "\(again.stdout)")
                }
                let device = try EditLog.open(at: td.path)
                defer { device.close() }
                try SyncTests.expectConverged(hub: hub.value, device: device)
            }
        }
    }
}
