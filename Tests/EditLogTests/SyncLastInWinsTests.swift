import EditLog
import EditLogSync
import Foundation
import Synchronization
import Testing

/// `sync --policy last-in-wins` against a hub (`editlog serve`) as ArcGIS means the rule: the edit that reaches
/// the service last wins, so a device's changes since its last sync overwrite what others put there meanwhile,
/// whatever the clocks say. Devices A and B and hub H are made from the same fixtures.
@Suite(.serialized) struct SyncLastInWinsTests {
    static func devices(_ ta: TempPath, _ tb: TempPath) throws -> (Unchecked<EditLog>, Unchecked<EditLog>) {
        (Unchecked(try SyncRig.device(ta, name: "a", seed: 31)), Unchecked(try SyncRig.device(tb, name: "b", seed: 32)))
    }

    /// The case, and the same with the clocks the other way round: B syncs last, so B's value wins on
    /// all three, and B's conflict names the upload rule, both writers and their times.
    @Test(arguments: [("2026-06-01T12:00:00Z", "2026-06-01T13:00:00Z"), ("2026-06-01T13:00:00Z", "2026-06-01T12:00:00Z")])
    func theDeviceThatSyncsLastWinsWhateverItsClock(times: (String, String)) async throws {
        let th = TempPath("hub"), ta = TempPath("a"), tb = TempPath("b")
        let hub = Unchecked(try SyncRig.hub(th))
        let (a, b) = try Self.devices(ta, tb)
        defer { hub.value.close(); a.value.close(); b.value.close() }
        let tree = SyncRig.tree1
        try SyncRig.set(a.value, tree, [("SiteWidth", "7.5")], at: times.0, actor: "ann", session: "a-1")
        try SyncRig.set(b.value, tree, [("SiteWidth", "2.5")], at: times.1, actor: "bob", session: "b-1")
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(a.value, url)
            let rb = try await SyncRig.sync(b.value, url)
            #expect(rb.pushed.contains { $0.globalId == tree && $0.fields.contains("SiteWidth") }, "\(rb.pushed)")
            _ = try await SyncRig.sync(a.value, url)
        }
        for (name, log) in [("hub", hub.value), ("A", a.value), ("B", b.value)] {
            #expect(try log.attributes(tree)["SiteWidth"]?.doubleValue == 2.5, "\(name)")
        }
        let c = try #require(try b.value.conflicts().first { $0.conflict.globalId == tree && $0.conflict.field == "SiteWidth" }).conflict
        #expect(c.policy == .lastInWins && c.rule == .upload && c.winner == .local)
        #expect(c.local.value.doubleValue == 2.5 && c.local.writer?.actor == "bob" && c.local.writer?.time.hasPrefix(String(times.1.dropLast())) == true)
        #expect(c.remote.value.doubleValue == 7.5 && c.remote.writer != nil)
        #expect(c.ruleDescription.contains("upload"))
        // Bundles between logs keep client time: the same two edits exchanged as events go to the later commit.
        let tc = TempPath("c"), td = TempPath("d")
        let c1 = Unchecked(try SyncRig.device(tc, name: "c", seed: 41)), d1 = Unchecked(try SyncRig.device(td, name: "d", seed: 42))
        defer { c1.value.close(); d1.value.close() }
        try SyncRig.set(c1.value, tree, [("SiteWidth", "7.5")], at: times.0, actor: "ann", session: "c-1")
        try SyncRig.set(d1.value, tree, [("SiteWidth", "2.5")], at: times.1, actor: "bob", session: "d-1")
        let fromC = try c1.value.events(after: try c1.value.baselineEnd())
        _ = try d1.value.importEvents(policy: .lastInWins, actor: "op", device: "test", source: "test") { event, _ in for e in fromC { try event(e) } }
        let later = times.0 > times.1 ? 7.5 : 2.5
        #expect(try d1.value.attributes(tree)["SiteWidth"]?.doubleValue == later)
        #expect(try d1.value.conflicts().first { $0.conflict.field == "SiteWidth" }?.conflict.rule == .clientTime)
    }

    /// Property: in every order of syncs over two rounds (each round A then B, or B then A, with random edits
    /// before it; four seeds of edits each), hub and devices converge; each field ends with the value of the device that synced a change of
    /// it last; no inspection, photo or relationship is lost.
    @Test(arguments: 0..<4)
    func inEverySyncOrderAllThreeConvergeOnTheLastUpload(order: Int) async throws {
        let th = TempPath("hub"), ta = TempPath("a"), tb = TempPath("b")
        let hub = Unchecked(try SyncRig.hub(th))
        let (a, b) = try Self.devices(ta, tb)
        defer { hub.value.close(); a.value.close(); b.value.close() }
        let t2 = try #require(try Fixture.globalIds("Trees").first { $0 != SyncRig.tree1 })
        let keys = [(SyncRig.tree1, "SiteWidth"), (SyncRig.tree1, "PlantedBy"), (t2, "SiteWidth"), (t2, "PlantedBy")]
        let names = ["ann", "bob"]
        let result = Mutex<[String: JSONValue]>([:])
        // Each device adds a tree with an inspection and photos (parents, children, attachments on both sides).
        let added = [try SyncRig.addTree(a.value, 300, actor: "ann", at: "2026-06-02T10:00:00Z"),
                     try SyncRig.addTree(b.value, 400, actor: "bob", at: "2026-06-02T11:00:00Z")]
        try await SyncRig.serve(hub.value) { url in
            var rng = SplitMix64(seed: UInt64(100 + order))
            var expected: [String: JSONValue] = [:]
            var unsynced: [[String: JSONValue]] = [[:], [:]]
            var counter = 0
            let logs = [a.value, b.value]
            for round in 0..<2 {
                for d in 0..<2 {
                    for _ in 0..<Int.random(in: 1...2, using: &rng) {
                        let (g, f) = keys.randomElement(using: &rng)!
                        counter += 1
                        let v: JSONValue = f == "SiteWidth" ? .double(Double(counter) + 0.5) : .string("\(names[d]) \(counter)")
                        // Client times at random: the rule must not depend on them.
                        let at = String(format: "2026-06-%02dT%02d:00:00Z", Int.random(in: 1...28, using: &rng), Int.random(in: 0...23, using: &rng))
                        try SyncRig.set(logs[d], g, [(f, v.serialized())], at: at, actor: names[d], session: "\(names[d])-\(round)-\(counter)")
                        unsynced[d]["\(g)|\(f)"] = v
                    }
                }
                let first = (order >> round) & 1
                for d in [first, 1 - first] {
                    _ = try await SyncRig.sync(logs[d], url)
                    expected.merge(unsynced[d]) { _, new in new }
                    unsynced[d] = [:]
                }
            }
            // Settle: each device takes what the other uploaded last.
            for d in [0, 1, 0] { _ = try await SyncRig.sync(logs[d], url) }
            result.withLock { $0 = expected }
        }
        let expected = result.withLock { $0 }
        #expect(!expected.isEmpty)
        for (name, log) in [("hub", hub.value), ("A", a.value), ("B", b.value)] {
            for (g, f) in keys {
                guard let want = expected["\(g)|\(f)"] else { continue }
                let got = try log.attributes(g)[f] ?? .null
                #expect(got == want || (got.doubleValue != nil && got.doubleValue == want.doubleValue), "order \(order), \(name): \(g) \(f) = \(got.serialized()), expected \(want.serialized())")
            }
            for side in added {
                #expect(try log.attributes(side.inspection)["TreeGlobalID"]?.stringValue == side.tree, "\(name)")
                #expect(try log.attachmentSnapshots(of: side.tree).map(\.globalId) == [side.photo], "\(name)")
                #expect(try log.attachmentSnapshots(of: side.inspection).map(\.globalId) == [side.inspectionPhoto], "\(name)")
            }
            #expect(try log.verify().ok)
        }
        let sa = try SyncRig.userState(a.value), sb = try SyncRig.userState(b.value), sh = try SyncRig.userState(hub.value)
        #expect(sa == sh, "\(SyncRig.differences(sa, sh).prefix(6))")
        #expect(sb == sh, "\(SyncRig.differences(sb, sh).prefix(6))")
    }
}
