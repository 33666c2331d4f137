import EditLog
import EditLogServer
import EditLogSync
import Foundation
import Testing

/// `editlog sync` against a service with Sync but no change tracking (`serve --no-change-tracking`, as an ArcGIS
/// Server service published without it): a replica, created once and synchronized each run, instead of query by
/// date, so deletes made there arrive.
@Suite("Sync through a replica")
struct SyncReplicaTests {
    @Test func aServiceWithoutChangeTrackingIsSyncedThroughAReplicaAndItsDeletesArrive() async throws {
        let th = TempPath("hub"), ta = TempPath("a"), tb = TempPath("b")
        let hub = Unchecked(try SyncRig.hub(th))
        let a = Unchecked(try SyncRig.device(ta, name: "a", seed: 41)), b = Unchecked(try SyncRig.device(tb, name: "b", seed: 42))
        defer { hub.value.close(); a.value.close(); b.value.close() }
        let trees = try Fixture.globalIds("Trees")
        let doomed = trees[5]
        try SyncRig.set(a.value, SyncRig.tree1, [("SiteWidth", "6.5")], at: "2026-06-01T12:00:00Z", actor: "ann", session: "a-1")
        try await SyncRig.serve(hub.value, changeTracking: false) { url in
            let ra = try await SyncRig.sync(a.value, url)
            #expect(ra.mode == "replica" && ra.snapshot, "\(ra.mode)")
            #expect(!ra.pushed.isEmpty)
            // B deletes a tree and changes another, and pushes that.
            try SyncRig.set(b.value, SyncRig.tree1, [("PlantedBy", #""Bob's crew""#)], at: "2026-06-01T12:10:00Z", actor: "bob", session: "b-1")
            _ = try b.value.apply(ScriptCommand(line: 1, op: .delete(layer: "Trees", globalId: doomed), actor: "bob", device: "b", at: "2026-06-01T12:11:00Z", session: nil))
            let rb = try await SyncRig.sync(b.value, url)
            #expect(rb.pushed.count >= 2, "\(rb.pushed)")
            // A's second run synchronizes its replica: B's update and B's delete arrive.
            let ra2 = try await SyncRig.sync(a.value, url)
            #expect(ra2.mode == "replica" && !ra2.snapshot)
            #expect(ra2.pulled.contains { $0.globalId == doomed }, "\(ra2.pulled)")
        }
        #expect(try a.value.attributes(SyncRig.tree1)["PlantedBy"]?.stringValue == "Bob's crew")
        #expect(try SyncRig.userState(a.value)[doomed] == nil)
        #expect(try SyncRig.userState(hub.value)[doomed] == nil)
        let differences = SyncRig.differences(try SyncRig.userState(a.value), try SyncRig.userState(hub.value))
        #expect(differences.isEmpty, "\(differences.prefix(3))")
        // The hub holds both devices' replicas, a's synchronized; a recorded which replica it uses.
        let replicas = try ReplicaRecord.all(hub.value.streamEvents(StreamName.replicas))
        #expect(replicas.count == 2 && replicas.allSatisfy { $0.user == SyncRig.hubUser })
        let pulled = try a.value.streamEvents(StreamName.sync).filter { $0.type == EventType.syncPulled.rawValue }
        #expect(pulled.last?.payload["mode"] == "replica")
        #expect(Set(pulled.compactMap { $0.payload["replicaId"]?.stringValue }) == [replicas[0].id])
        #expect(replicas[0].syncs.count >= 1)
    }
}
