import EditLog
import Foundation

/// The log handles a server uses. Writes go through the one read-write handle, one at a time (the
/// store serializes writers anyway). Reads never wait for a write: each takes its own read-only handle
/// (its own SQLite connection) from a pool, and in WAL mode a reader sees the last committed state while a
/// write is in progress. The facade's handle is a single serialized connection, so sharing it would queue
/// every read behind every write.
final class LogHandles: @unchecked Sendable {
    let path: String
    /// The schema in force and its service documents, as of the newest schema event this server has seen
    /// (`followSchema`: a change `schema apply`, a sync or this server recorded is served from the next request on).
    var schema: ServiceSchema { schemaLock.withLock { current.schema } }
    var documents: [JSONValue] { schemaLock.withLock { current.documents } }
    /// When the schema in force was recorded (epoch ms): every layer's `editingInfo.schemaLastEditDate`, which ArcGIS
    /// clients compare to know that their copy of the definitions is stale.
    var schemaEditDate: Int64? { schemaLock.withLock { current.editDate } }
    private let schemaLock = NSLock()
    private var current: (position: Int64, schema: ServiceSchema, documents: [JSONValue], editDate: Int64?)
    private let writer: EditLog
    /// The writer's injected clock and ids: a service edit's time and session id come from here, as a
    /// `record` of the log's own would.
    var clock: any LogClock { writer.clock }
    var ids: any IDGenerator { writer.ids }
    private let writeLock = NSLock()
    private let poolLock = NSLock()
    private var idle: [EditLog] = []
    private let keep: Int
    /// WAL checkpoints run off the request path: the writer's commits never checkpoint (a checkpoint inside a
    /// commit made that edit wait for the whole copy and its fsync: applyEdits' slowest answers); after a write,
    /// when none is running and the last began over `checkpointInterval` seconds ago, a PASSIVE checkpoint runs on
    /// its own connection, on its own queue, while edits and reads go on.
    private let checkpoints = DispatchQueue(label: "editlog.serve.checkpoint", qos: .utility)
    private var checkpointer: EditLog?
    private var checkpointRunning = false
    private var lastCheckpoint = Date.distantPast
    static let checkpointInterval: TimeInterval = 1

    /// A hub node that decides and appends each write (`LogWriter`), when the log is its local copy.
    private let through: (any LogWriter)?

    init(writer: EditLog, keep: Int, through: (any LogWriter)? = nil) {
        self.writer = writer
        self.through = through
        self.path = writer.path
        let inForce = try? writer.schemaInForce()
        self.current = (inForce?.position ?? 0, writer.schema, (try? writer.serviceDocuments()) ?? [],
                        (try? writer.schemaVersions().last).flatMap { $0.map { Timestamp.parse($0.recordedTime) } ?? nil })
        self.keep = max(1, keep)
        if (try? writer.setAutoCheckpoint(pages: 0)) != nil {
            checkpointer = try? EditLog.open(at: writer.path)
            // Without a second connection, the writer checkpoints on commit as before.
            if checkpointer == nil { try? writer.setAutoCheckpoint(pages: 10_000) }
        }
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

    /// Serves the newest schema when one was recorded since the last request (one indexed lookup on a reader).
    func followSchema() throws {
        try read { log in
            let now = try log.schemaInForce()
            guard now.position != schemaLock.withLock({ current.position }) else { return }
            let documents = try log.serviceDocuments()
            let editDate = try log.schemaVersions().last.flatMap { Timestamp.parse($0.recordedTime) }
            schemaLock.withLock { current = (now.position, now.schema, documents, editDate) }
        }
    }

    func write<T>(_ body: (EditLog) throws -> T) throws -> T {
        writeLock.lock()
        defer {
            let start = checkpointer != nil && !checkpointRunning && Date().timeIntervalSince(lastCheckpoint) >= Self.checkpointInterval
            if start { checkpointRunning = true; lastCheckpoint = Date() }
            writeLock.unlock()
            if start {
                checkpoints.async { [self] in
                    try? checkpointer?.checkpointPassive()
                    writeLock.lock()
                    checkpointRunning = false
                    writeLock.unlock()
                }
            }
        }
        if let through { return try through.write(body) }
        return try body(writer)
    }

    /// On a hub node's local copy, catches up with the hub first (`LogWriter.refresh`); nothing on a log of its own.
    func refresh() throws { try through?.refresh() }

    /// On a hub node: seconds since its local copy was last known to hold the store's head.
    var staleness: Double? { through?.staleness }

    func close() {
        checkpoints.sync {}
        checkpointer?.close()
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
