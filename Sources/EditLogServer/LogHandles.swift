import EditLog
import Foundation

/// The log handles a server uses. Writes go through the one read-write handle, one at a time (the
/// store serializes writers anyway). Reads never wait for a write: each takes its own read-only handle
/// (its own SQLite connection) from a pool, and in WAL mode a reader sees the last committed state while a
/// write is in progress. The facade's handle is a single serialized connection, so sharing it would queue
/// every read behind every write.
final class LogHandles: @unchecked Sendable {
    let path: String
    let schema: ServiceSchema
    /// The service documents of the schema (read once: the schema does not change while serving).
    let documents: [JSONValue]
    private let writer: EditLog
    /// The writer's injected clock and ids: a service edit's time and session id come from here, as a
    /// `record` of the log's own would.
    var clock: any LogClock { writer.clock }
    var ids: any IDGenerator { writer.ids }
    private let writeLock = NSLock()
    private let poolLock = NSLock()
    private var idle: [EditLog] = []
    private let keep: Int

    init(writer: EditLog, keep: Int) {
        self.writer = writer
        self.path = writer.path
        self.schema = writer.schema
        self.documents = (try? writer.serviceDocuments()) ?? []
        self.keep = max(1, keep)
    }

    func read<T>(_ body: (EditLog) throws -> T) throws -> T {
        poolLock.lock()
        let reused = idle.popLast()
        poolLock.unlock()
        let log = try reused ?? EditLog.open(at: path, readonly: true)
        defer {
            poolLock.lock()
            if idle.count < keep { idle.append(log); poolLock.unlock() } else { poolLock.unlock(); log.close() }
        }
        return try body(log)
    }

    func write<T>(_ body: (EditLog) throws -> T) throws -> T {
        writeLock.lock()
        defer { writeLock.unlock() }
        return try body(writer)
    }

    func close() {
        poolLock.lock()
        let all = idle
        idle = []
        poolLock.unlock()
        for l in all { l.close() }
    }
}

/// A fixed-window rate limit per client key.
final class RateLimiter: @unchecked Sendable {
    let perSecond: Double
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, last: Double)] = [:]

    init(perSecond: Double) { self.perSecond = perSecond }

    /// A token bucket of one second's worth of requests, refilled continuously.
    func allow(_ key: String, now: Double = Date().timeIntervalSince1970) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let capacity = max(1, perSecond)
        var b = buckets[key] ?? (capacity, now)
        b.tokens = min(capacity, b.tokens + (now - b.last) * perSecond)
        b.last = now
        guard b.tokens >= 1 else { buckets[key] = b; return false }
        b.tokens -= 1
        buckets[key] = b
        if buckets.count > 10_000 { buckets = buckets.filter { now - $0.value.last < 60 } }
        return true
    }
}
