import EditLog
import Foundation
import Hummingbird
import Synchronization

/// The log handles a server uses. Writes go through the one read-write handle, one at a time (the
/// store serializes writers anyway). Reads never wait for a write: each runs on a reader connection of GRDB's
/// `DatabasePool` (`EditLogReaders`, at most `keep` of them), and in WAL mode a reader sees the last committed state
/// while a write is in progress. The facade's handle is a single serialized connection, so sharing it would queue
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
    /// Opened at the first read (a read that cannot open it gets the error, and the next tries again).
    private var pool: EditLogReaders?
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

    /// Where the writer loop counts its groups.
    let groupCommits: GroupCommits

    init(writer: EditLog, keep: Int, through: (any LogWriter)? = nil, groupCommits: GroupCommits = GroupCommits()) {
        self.writer = writer
        self.groupCommits = groupCommits
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

    /// A read on a reader of the pool; inside the writer loop's group, on the writer (it sees the group's writes).
    func read<T>(_ body: (EditLog) throws -> T) throws -> T {
        if inGroup { return try body(writer) }
        return try readers().read(body)
    }

    private func readers() throws -> EditLogReaders {
        poolLock.lock()
        defer { poolLock.unlock() }
        if let pool { return pool }
        let opened = try EditLogReaders(at: path, count: keep, clock: writer.clock)
        pool = opened
        return opened
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

    /// A write of a request. Inside the writer loop's group (`submit`), a savepoint of it; elsewhere its own
    /// transaction (through the hub node, when there is one).
    func write<T>(_ body: (EditLog) throws -> T) throws -> T {
        if inGroup { return try writer.savepoint { try body(writer) } }
        writeLock.lock()
        defer { afterWrite() }
        if let through { return try through.write(body) }
        return try body(writer)
    }

    /// Releases the write lock and, when it is time, starts a checkpoint off the request path.
    private func afterWrite() {
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

    // MARK: The writer loop (group commit)

    /// A request that writes, queued for the writer loop: `body` computes its answer (its writes through `write`,
    /// its reads through `read`); `done` gets it once the group it ran in committed.
    final class WriteJob: @unchecked Sendable {
        let body: () throws -> Response
        let done: @Sendable (Result<Response, any Error>) -> Void
        /// The answer `body` gave inside the group, handed out once the group committed.
        var result: Result<Response, any Error>?
        init(body: @escaping () throws -> Response, done: @escaping @Sendable (Result<Response, any Error>) -> Void) {
            self.body = body; self.done = done
        }
    }

    /// Requests in one group at most: bounds its transaction.
    static let maxGroup = 64
    private let loopLock = NSLock()
    private var queued: [WriteJob] = []
    private var draining = false
    private let loop = DispatchQueue(label: "editlog.serve.writer", qos: .userInitiated)
    /// The thread running a group, while it does (its requests' `write` and `read` are the group's).
    private let groupThread = Mutex<pthread_t?>(nil)
    private var inGroup: Bool { groupThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    /// Queues a request that writes. One writer loop drains the queue: every request queued when it looks runs, one
    /// after another, each under a savepoint of one transaction that commits once. A request that throws rolls back
    /// to its own savepoint; its error is its answer alone. Answers are handed out after the commit; a group whose
    /// commit fails runs again request by request.
    func submit(_ job: WriteJob) {
        loopLock.lock()
        queued.append(job)
        let start = !draining
        draining = true
        loopLock.unlock()
        if start { loop.async { [self] in drain() } }
    }

    private func drain() {
        while true {
            loopLock.lock()
            let jobs = Array(queued.prefix(Self.maxGroup))
            queued.removeFirst(jobs.count)
            if jobs.isEmpty { draining = false }
            loopLock.unlock()
            if jobs.isEmpty { return }
            commitGroup(jobs)
        }
    }

    /// Runs `jobs` in one group and hands out their answers. On a hub node, one at a time and not grouped: a group
    /// would run whole requests (parsing and planning too) under the node's lock, which its catch-up and every read
    /// that needs the store's head wait for. A node can group once a request's plan is made outside that lock.
    private func commitGroup(_ jobs: [WriteJob]) {
        if through != nil {
            for job in jobs { job.done(Result { try job.body() }) }
            return
        }
        let outcome = Result { () throws -> Void in
            writeLock.lock()
            defer { afterWrite() }
            try writer.group {
                groupThread.withLock { $0 = pthread_self() }
                defer { groupThread.withLock { $0 = nil } }
                for job in jobs { job.result = Result { try writer.savepoint { try job.body() } } }
            }
        }
        switch outcome {
        case .success:
            groupCommits.committed(requests: jobs.count)
            for job in jobs { job.done(job.result!) }
        case .failure(let error) where jobs.count == 1:
            jobs[0].done(.failure(error))
        case .failure:
            // The commit failed for the group (a disk error): each request again on its own, so that one request's
            // trouble is its answer alone.
            for job in jobs { commitGroup([job]) }
        }
    }

    /// On a hub node's local copy, catches up with the hub first (`LogWriter.refresh`); nothing on a log of its own.
    func refresh() throws { try through?.refresh() }

    /// On a hub node: seconds since its local copy was last known to hold the store's head.
    var staleness: Double? { through?.staleness }

    func close() {
        checkpoints.sync {}
        checkpointer?.close()
        poolLock.lock()
        let all = pool
        pool = nil
        poolLock.unlock()
        all?.close()
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
