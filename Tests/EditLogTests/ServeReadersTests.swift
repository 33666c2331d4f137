@testable import EditLog
@testable import EditLogServer
import Foundation
import Testing

/// A server's reads: on GRDB's `DatabasePool` (`EditLogReaders`), at most `keep` reader connections at once, and
/// never waiting for a write in progress.
@Suite struct ServeReadersTests {
    /// What is kept across threads under a lock.
    final class Locked<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T
        init(_ value: T) { self.value = value }
        func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
    }

    @Test func aReadAnswersWhileAWriteHoldsItsTransaction() throws {
        let t = TempPath("readers-write")
        let log = try SyncRig.hub(t)
        let handles = LogHandles(writer: log, keep: 2)
        defer { handles.close(); log.close() }
        let head = try log.lastPosition()
        let inWrite = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
        let writer = UncheckedBox(log)
        DispatchQueue.global().async {
            _ = try? writer.value.store.write { db, _ in
                try db.execute(sql: "CREATE TEMP TABLE held (x)")
                inWrite.signal()
                _ = release.wait(timeout: .now() + 30)
            }
            ended.signal()
        }
        #expect(inWrite.wait(timeout: .now() + 30) == .success)
        // The writer's IMMEDIATE transaction is open: the read is answered from the last commit meanwhile.
        let seen = try handles.read { try $0.lastPosition() }
        release.signal()
        #expect(ended.wait(timeout: .now() + 30) == .success)
        #expect(seen == head)
    }

    @Test func readsRunOnAtMostKeepConnectionsAtOnce() throws {
        let t = TempPath("readers-cap")
        let log = try SyncRig.hub(t)
        let handles = LogHandles(writer: log, keep: 2)
        defer { handles.close(); log.close() }
        let active = Locked((now: 0, most: 0))
        let errors = Locked<[String]>([])
        let done = DispatchGroup()
        // Threads of their own: Dispatch's pool would run only as many at once as there are cores.
        for _ in 0..<6 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                do {
                    try handles.read { facade in
                        try facade.read { db in
                            _ = try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM events")
                            active.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                            // Two reads meet (the pool has two readers), then each holds its reader a while: without a
                            // bound all six would be inside at once.
                            let deadline = Date(timeIntervalSinceNow: 5)
                            while active.withLock({ $0.now }) < 2, Date() < deadline { usleep(1000) }
                            usleep(100_000)
                            active.withLock { $0.now -= 1 }
                        }
                    }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(errors.withLock { $0 } == [])
        #expect(active.withLock { $0.most } == 2)
    }
}

/// A value handed to another thread by a test that orders the threads itself.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
