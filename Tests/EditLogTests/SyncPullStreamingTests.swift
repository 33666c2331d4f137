import EditLog
import EditLogSync
import Foundation
import Synchronization
import Testing

/// A pull in windows keeps nothing per change in memory (issue 57), and writes what it wrote before it did.
@Suite(.serialized) struct SyncPullStreamingTests {
    /// The device's events after a pull in windows of 2 generations (updates, an add with an inspection and photos,
    /// a cascaded delete, a conflict), every field of each in order (the service's port, which differs per run,
    /// left out, and with it the hashes, which cover it), with the run's list of pulled changes. The digest pins
    /// the events, their order, ids, times, positions and `SyncPulled` / `MergeDecided` payloads: the windows and
    /// their timing must not change them (the next window built before or while the one ahead imports).
    @Test(arguments: [false, true]) func aPullInWindowsWritesTheSameEventsAsBefore(buildNextWindowFirst: Bool) async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let (parent, _) = try Fixture.treeWithInspections()
        let trees = Array(try Fixture.globalIds("Trees").filter { $0 != parent && $0 != SyncRig.tree1 }.prefix(8))
        let digest = Mutex<[String]>([])
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            for (i, g) in trees.enumerated() {
                try SyncRig.set(hub.value, g, [("PlantedBy", "\"crew \(i)\"")], at: "2026-06-0\(i + 1)T10:00:00Z", actor: "hank", session: "h-\(i)")
            }
            _ = try SyncRig.addTree(hub.value, 300, actor: "hank", at: "2026-06-02T11:00:00Z")
            try hub.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(parent)","actor":"hank"}"#)
            try SyncRig.set(hub.value, SyncRig.tree1, [("SiteWidth", "20")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-c")
            try SyncRig.set(device.value, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-c")
            try SyncRig.set(hub.value, trees[1], [("PlantedBy", "\"crew again\"")], at: "2026-07-01T10:00:00Z", actor: "hank", session: "h-again")
            let r = try await SyncRig.sync(device.value, url, generationWindow: 2, buildNextWindowFirst: buildNextWindowFirst)
            let port = url.split(separator: "/")[1]
            let lines = try device.value.events().map { e in
                ["\(e.position)", e.id.uuidString, e.stream, "\(e.streamVersion)", e.type, e.actor, e.device, e.session ?? "-", e.cause, e.clientTime ?? "-",
                 e.recordedTime, e.origin.logId, "\(e.origin.position)", e.payload.serialized()]
                    .joined(separator: " ").replacingOccurrences(of: String(port), with: "HOST")
            }
            let events = lines.joined(separator: "\n")
            let pulled = r.pulled.map { $0.json.serialized() }.joined(separator: "\n")
            digest.withLock { $0 = [Hex.encode(EventHash.sha256(Array(events.utf8))), Hex.encode(EventHash.sha256(Array(pulled.utf8))), String(r.pulled.count)] }
        }
        let got = digest.withLock { $0 }
        #expect(got == ["6fc2edd7050fd71539bf4ff352e77e039138e7bfaedad1d4a914a354091263b9",
                       "eb5d852612e3537b351e4352d3943af34663688d98668a65f8ce7a3cb0875193", "16"], "\(got)")
    }

    /// Each window of a pull imports at most its own changes, and between windows the pull holds no per-change
    /// fact in memory when it pulls only updates (no delete to keep for the last window, no new ObjectID): 12
    /// changed trees in windows of 2 generations.
    @Test func betweenWindowsAPullOfUpdatesHoldsNoChangeInMemory() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let trees = Array(try Fixture.globalIds("Trees").prefix(12))
        let seen = Mutex<[(window: Int, held: Int)]>([])
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            for (i, g) in trees.enumerated() {
                try SyncRig.set(hub.value, g, [("PlantedBy", "\"crew \(i)\"")], at: "2026-06-01T10:00:00Z", actor: "hank", session: "h-\(i)")
            }
            var options = SyncOptions(actor: "device_operator", device: "test")
            options.generationWindow = 2
            options.windowProbe = { window, held in seen.withLock { $0.append((window, held)) } }
            let r = try await SyncEngine(log: device.value, client: try FeatureServiceClient(url: url, token: SyncRig.token), options: options).run()
            #expect(r.pulled.count == trees.count && r.pulled.allSatisfy { $0.kind == "update" }, "\(r.pulled)")
        }
        let windows = seen.withLock { $0 }
        #expect(windows.count >= 3, "\(windows)")
        #expect(windows.allSatisfy { $0.window <= 2 && $0.held == 0 }, "\(windows)")
    }
}
