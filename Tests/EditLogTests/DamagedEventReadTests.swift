import EditLog
import Foundation
import Testing

/// Readers that look at one event out of order (a replay resuming from a checkpoint, a diff at its window's
/// start, a sync's base of a feature) fail on a damaged event, naming its position: it is never read as "no
/// decision" or "no feature".
@Suite struct DamagedEventReadTests {
    /// Device b, which kept a tree that device a deleted: b's decision (skip the delete) and the delete it decides
    /// about, at `decision` and `decision + 1`.
    static func keptTree(_ ta: TempPath, _ tb: TempPath) throws -> (b: EditLog, tree: String, decision: Int64) {
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        defer { a.close() }
        let tree = try MergeDeleteTests.deleteHereUpdateThere(a, b)
        try MergeDevices.exchange(a, into: b, viaBundle: false)
        let decision = try #require(try RawLog.read(tb.path) { db in
            try Int64.fetchOne(db, sql: """
                SELECT d.position FROM events d JOIN events x ON x.position = d.position + 1
                WHERE d.type = 'MergeDecided' AND x.type = 'FeatureDeleted' AND d.stream = x.stream
                  AND json_extract(d.payload, '$.log') = 'log-b' AND json_extract(d.payload, '$.skipDelete') = 1
                """)
        })
        #expect(try b.show(globalId: tree)["deleted"] == false, "b kept the tree")
        return (b, tree, decision)
    }

    /// Removes the deciding log from the stored decision at `position` (a payload `MergeDecision` cannot read).
    static func damageDecision(_ path: String, at position: Int64) throws {
        try RawLog.writeWithoutTransaction(path) { db in
            try db.execute(sql: "DROP TRIGGER events_append_only_update; UPDATE events SET payload = json_remove(payload, '$.log') WHERE position = ?",
                           arguments: [position])
        }
    }

    static func expectCorrupt(at position: Int64, _ what: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("\(what) over a damaged decision at position \(position) succeeded")
        } catch let error as EditLogError {
            #expect(error.kind == .corrupt && error.position == position, "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func aReplayResumingAfterADamagedDecisionFailsNamingIt() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let (b, _, p) = try Self.keptTree(ta, tb)
        defer { try? FileManager.default.removeItem(atPath: tb.path + ".checkpoints") }
        #expect(try b.createCheckpoints(every: p).first?.position == p)
        let good = try b.replayDigest(asOf: .position(p + 1))
        let full = try b.replayDigest(asOf: .position(p + 1), useCheckpoints: false)
        #expect(good.checkpoint == p && good.digest == full.digest, "the replay from the decision's checkpoint applies it")
        b.close()
        try Self.damageDecision(tb.path, at: p)
        let reopened = try EditLog.open(at: tb.path)
        defer { reopened.close() }
        #expect(try reopened.checkpoints().first?.position == p)
        Self.expectCorrupt(at: p, "a replay from the checkpoint at the decision") { _ = try reopened.replayDigest(asOf: .position(p + 1)) }
    }

    @Test func aDiffStartingAfterADamagedDecisionFailsNamingIt() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let (b, tree, p) = try Self.keptTree(ta, tb)
        let head = try b.eventCount()
        let good = try b.diff(from: .position(p), to: .position(head))
        #expect(!good.changes.contains { $0.globalId == tree && $0.kind == .deleted }, "the diff applies b's decision: \(good.changes)")
        b.close()
        try Self.damageDecision(tb.path, at: p)
        let reopened = try EditLog.open(at: tb.path)
        defer { reopened.close() }
        Self.expectCorrupt(at: p, "a diff from the decision") { _ = try reopened.diff(from: .position(p), to: .position(head)) }
    }
}

/// A sync's base of a feature (its attributes when both sides last agreed) is read from the feature's stream: an
/// event there that cannot be read fails the sync, naming it, instead of reading as "the feature did not exist".
@Suite struct DamagedSyncBaseTests {
    @Test func aSnapshotPullOverADamagedBaseEventFailsNamingIt() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th))
        defer { hub.value.close() }
        let doomed = try Fixture.globalIds("Trees")[5]
        // The hub deletes a tree the device changed since the base: the snapshot lacks it, so the device reads its base.
        _ = try hub.value.apply(ScriptCommand(line: 1, op: .delete(layer: "Trees", globalId: doomed), actor: "hank", device: "hub", at: "2026-06-01T12:11:00Z", session: nil))
        let device = try SyncRig.device(td)
        try SyncRig.set(device, doomed, [("PlantedBy", "\"crew D\"")], at: "2026-06-01T12:00:00Z", actor: "dana", session: "d-1")
        let bad = try #require(try RawLog.read(td.path) { db in
            try Int64.fetchOne(db, sql: "SELECT position FROM events WHERE type = 'FeatureBaselined' AND stream = ?",
                               arguments: [StreamName.feature(layer: 0, globalId: doomed)])
        })
        device.close()
        try RawLog.writeWithoutTransaction(td.path) { db in
            try db.execute(sql: #"DROP TRIGGER events_append_only_update; UPDATE events SET payload = replace(payload, '"attributes":{', '"attributes":7,"x":{') WHERE position = ?"#,
                           arguments: [bad])
        }
        let reopened = Unchecked(try EditLog.open(at: td.path))
        defer { reopened.value.close() }
        try await SyncRig.serve(hub.value, changeTracking: false) { url in
            do {
                let r = try await SyncRig.sync(reopened.value, url)
                Issue.record("a sync over a damaged base event at position \(bad) succeeded: \(r.json.serialized())")
            } catch let error as EditLogError {
                #expect(error.kind == .corrupt && error.position == bad, "\(error)")
            }
        }
    }
}
