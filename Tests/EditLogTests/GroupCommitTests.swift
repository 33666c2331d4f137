import EditLog
@testable import EditLogServer
import Foundation
import Hummingbird
import Testing

/// Group commit: writes that share one transaction, each under a savepoint, committed once; a failing write rolls
/// back alone; the commit gate (a hub node's append) sees the whole group once. Then the serve writer loop that
/// drains queued requests into such groups.
@Suite struct GroupCommitTests {
    struct Boom: Error {}

    static func trees(_ n: Int) throws -> [String] { Array(try Fixture.globalIds("Trees").prefix(n)) }

    static func dbh(_ log: EditLog, _ gid: String) throws -> JSONValue? {
        try log.allFeatures(layer: 0).first { $0.globalId == gid }?.attributes["DBH"]
    }

    /// What is kept across threads under a lock.
    final class Locked<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T
        init(_ value: T) { self.value = value }
        func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
    }

    /// The positions each call of the gate was given.
    static func recordGate(_ log: EditLog) -> Locked<[[Int64]]> {
        let calls = Locked<[[Int64]]>([])
        log.setCommitGate { events, _ in calls.withLock { $0.append(events.map(\.position)) } }
        return calls
    }

    @Test func aGroupCommitsOnceAndAFailedSavepointRollsBackAlone() throws {
        let t = TempPath("group")
        let log = try SyncRig.hub(t)
        defer { log.close() }
        let g = try Self.trees(3)
        let before = try log.lastPosition()
        let gate = Self.recordGate(log)
        try log.group {
            try log.savepoint { try SyncRig.set(log, g[0], [("DBH", "41")], at: "2026-06-03T09:00:00Z", actor: "ann", session: "s-a") }
            do {
                try log.savepoint {
                    try SyncRig.set(log, g[1], [("DBH", "42")], at: "2026-06-03T09:01:00Z", actor: "bob", session: "s-b")
                    throw Boom()
                }
                Issue.record("the second savepoint did not throw")
            } catch {
                #expect(error is Boom, "\(error)")
            }
            // A read inside the group sees the group's writes so far.
            #expect(try Self.dbh(log, g[0])?.doubleValue == 41)
            try log.savepoint { try SyncRig.set(log, g[2], [("DBH", "43")], at: "2026-06-03T09:02:00Z", actor: "cy", session: "s-c") }
        }
        let after = try log.lastPosition()
        // One pass of the gate, for every event of the group, gap-free from the head before it.
        #expect(gate.withLock { $0 } == [Array((before + 1)...after)])
        #expect(try Self.dbh(log, g[0])?.doubleValue == 41)
        #expect(try Self.dbh(log, g[1])?.doubleValue != 42)
        #expect(try Self.dbh(log, g[2])?.doubleValue == 43)
        #expect(try log.sessions().contains { $0.state.id == "s-b" } == false)
        #expect(try log.verify().ok)
        #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
    }

    @Test func aGroupTheGateRefusesWritesNothingAndTheNextWriteFollowsOn() throws {
        let t = TempPath("group-refused")
        let log = try SyncRig.hub(t)
        defer { log.close() }
        let g = try Self.trees(2)
        let before = try log.lastPosition()
        let digest = try log.digestOfProjections()
        log.setCommitGate { _, _ in throw EditLogError(.conflict, "the hub moved on") }
        #expect(throws: EditLogError.self) {
            try log.group {
                try log.savepoint { try SyncRig.set(log, g[0], [("DBH", "51")], at: "2026-06-03T09:00:00Z", actor: "ann", session: "s-a") }
                try log.savepoint { try SyncRig.set(log, g[1], [("DBH", "52")], at: "2026-06-03T09:01:00Z", actor: "bob", session: "s-b") }
            }
        }
        #expect(try log.lastPosition() == before)
        #expect(try log.digestOfProjections() == digest)
        // The appender's cached head was dropped with the group: the next write starts right after `before`.
        let gate = Self.recordGate(log)
        try SyncRig.set(log, g[1], [("DBH", "53")], at: "2026-06-03T09:02:00Z", actor: "bob", session: "s-b2")
        #expect(gate.withLock { $0 }.first?.first == before + 1)
        #expect(try Self.dbh(log, g[1])?.doubleValue == 53)
        #expect(try log.verify().ok)
    }

    /// The writer loop: requests queued while a group runs form the next group, committed once; one that throws is
    /// its own error and leaves nothing; another of the group reads what an earlier one of it wrote.
    @Test func theWriterLoopGroupsQueuedRequestsAndAnswersEachAlone() throws {
        let t = TempPath("group-loop")
        let log = try SyncRig.hub(t)
        let handles = LogHandles(writer: log, keep: 2)
        defer { handles.close(); log.close() }
        let g = try Self.trees(4)
        let gate = Self.recordGate(log)
        let release = DispatchSemaphore(value: 0)
        let answers = Locked<[String: Result<Response, any Error>]>([:])
        let done = DispatchGroup()
        func job(_ name: String, _ body: @escaping () throws -> Void) -> LogHandles.WriteJob {
            done.enter()
            return LogHandles.WriteJob(body: { try body(); return Response(status: .ok) },
                                       done: { r in answers.withLock { $0[name] = r }; done.leave() })
        }
        func set(_ gid: String, _ v: Int, _ s: String) throws {
            _ = try handles.write { log in try SyncRig.set(log, gid, [("DBH", "\(v)")], at: "2026-06-03T09:00:00Z", actor: "ann", session: s) }
        }
        // A waits in the loop until B, C and D are queued behind it.
        let started = DispatchSemaphore(value: 0)
        handles.submit(job("A") { try set(g[0], 61, "s-a"); started.signal(); release.wait() })
        #expect(started.wait(timeout: .now() + 30) == .success)
        handles.submit(job("B") { try set(g[1], 62, "s-b") })
        handles.submit(job("C") { try set(g[2], 63, "s-c"); throw Boom() })
        handles.submit(job("D") {
            try set(g[3], 64, "s-d")
            // B's write, not committed yet, is seen by a later request of its group.
            let seen = try handles.read { try Self.dbh($0, g[1]) }
            guard seen?.doubleValue == 62 else { throw EditLogError(.conflict, "D did not see B's write: \(String(describing: seen))") }
        })
        release.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        let got = answers.withLock { $0 }
        for name in ["A", "B", "D"] {
            if case .failure(let e) = got[name] { Issue.record("\(name): \(e)") }
        }
        guard case .failure(let e) = got["C"] else { Issue.record("C did not fail"); return }
        #expect(e is Boom)
        // Two commits: A alone, then B and D together (C rolled back inside the group).
        let calls = gate.withLock { $0 }
        #expect(calls.count == 2)
        if calls.count == 2 { #expect(calls[1].first == calls[0].last.map { $0 + 1 }) }
        #expect(handles.groupCommits.figures == ["groups": 2, "requests": 4, "largest": 3])
        #expect(try Self.dbh(log, g[1])?.doubleValue == 62 && Self.dbh(log, g[3])?.doubleValue == 64)
        #expect(try Self.dbh(log, g[2])?.doubleValue != 63)
        #expect(try log.verify().ok)
        #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
    }
}
