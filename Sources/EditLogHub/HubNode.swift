import EditLog
import EditLogCore
import EditLogStore
import Foundation
import Synchronization

/// A node of a hub on PostgreSQL: the hub's store of record, and a replica of it in a local SQLite file (the read
/// models: `EditLog.createReplica`) that a catch-up subscription keeps up with the store's head.
///
/// - **Writes** (`write`): decided on the replica caught up to the hub's head, in one replica transaction; before it
///   commits, its commit gate appends the transaction's events to the hub with their expected stream versions and
///   the head they were decided on. The hub holds them at the same positions with the same hashes, and then the
///   replica commits: the node answers with its own projection holding what it appended (read-your-writes). If the
///   hub moved on meanwhile (another node appended), nothing is appended, the replica rolls back, catches up and
///   decides again, at most `attempts` times.
/// - **Catch-up** (`startFollowing`): woken by the store's NOTIFY at each commit, and every `poll` seconds anyway.
/// - **Restart**: the replica's file is kept (`DIR/<log id>.editlog`); a node catches up from its last position. A
///   replica that is not a prefix of the hub (deleted, damaged, another hub's) is built again from the store.
public final class HubNode: LogWriter, @unchecked Sendable {
    public let store: PostgresEventStore
    /// The replica: every read of the node, and the writer writes go through (`write`).
    public let replica: EditLog
    public let replicaPath: String
    /// How many times a write is decided again when the hub moved on before its append.
    public static let attempts = 8
    /// How many events a catch-up reads per round trip.
    static let catchUpBatch = 2000

    /// One writer of the replica at a time: the node's writes and its catch-up.
    private let lock = NSLock()
    /// Set by the gate when the hub refused the append because it had moved on (a write to decide again).
    private var hubMoved = false
    private var listener: Task<Void, Never>?
    private var follower: Thread?
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    /// Writes committed, and decisions made again because the hub had moved on (since the node opened).
    public private(set) var stats = (writes: 0, redecided: 0)

    private init(store: PostgresEventStore, replica: EditLog, replicaPath: String) {
        self.store = store; self.replica = replica; self.replicaPath = replicaPath
    }

    /// The replica file of `store` in `directory`.
    public static func replicaPath(of store: PostgresEventStore, in directory: String) -> String {
        (directory as NSString).appendingPathComponent("\(store.logId).editlog")
    }

    /// Opens the node's replica of `store` in `directory` (created if needed), catches it up and sets its gate.
    public static func open(_ store: PostgresEventStore, cacheDirectory directory: String, clock: any LogClock = SystemClock(),
                            ids: (any IDGenerator)? = nil) throws(EditLogError) -> HubNode {
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw EditLogError(.io, "cannot create the cache directory: \(error.localizedDescription)", at: directory)
        }
        let path = replicaPath(of: store, in: directory)
        let replica = try openReplica(store, at: path, clock: clock, ids: ids)
        let node = HubNode(store: store, replica: replica, replicaPath: path)
        replica.setCommitGate { [unowned node] events, blob in try node.push(events, blob: blob) }
        try node.catchUp()
        return node
    }

    /// Opens the store at `location`, then the node (`open(_:cacheDirectory:)`), from synchronous code.
    public static func open(_ location: PostgresLocation, cacheDirectory directory: String, clock: any LogClock = SystemClock(),
                            ids: (any IDGenerator)? = nil) throws(EditLogError) -> HubNode {
        let store = try blocking { try await PostgresEventStore.open(location, clock: clock) }
        do { return try open(store, cacheDirectory: directory, clock: clock, ids: ids) } catch {
            store.close()
            throw error
        }
    }

    /// The replica at `path` if it is a prefix of the hub's log, else a new one (any old file removed).
    static func openReplica(_ store: PostgresEventStore, at path: String, clock: any LogClock, ids: (any IDGenerator)?) throws(EditLogError) -> EditLog {
        if FileManager.default.fileExists(atPath: path) {
            if let log = try? EditLog.open(at: path, clock: clock, ids: ids) {
                if log.logId == store.logId, let head = try? log.head(),
                   let there = try blocking({ try await store.events(after: head.position - 1, limit: 1) }).first, there.hash == head.hash {
                    return log
                }
                log.close()
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let first = try blocking { try await store.events(after: 0, limit: catchUpBatch) }
        return try EditLog.createReplica(at: path, logId: store.logId, first: first, fetchBlob: { sha in try fetchBlob(store, sha) },
                                         clock: clock, ids: ids)
    }

    static func fetchBlob(_ store: PostgresEventStore, _ sha: String) throws(EditLogError) -> [UInt8]? {
        guard let digest = Hex.decode(sha) else { return nil }
        return try blocking { try await store.blob(sha256: digest) }
    }

    // MARK: Writes

    /// Runs `body` on the replica caught up to the hub's head; its writes reach the hub before the replica commits
    /// them (the gate). Decided again while the hub moves on under it, at most `attempts` times.
    public func write<T>(_ body: (EditLog) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        var attempt = 1
        while true {
            try catchUpLocked()
            hubMoved = false
            do {
                let result = try body(replica)
                stats.writes += 1
                return result
            } catch {
                guard hubMoved else { throw error }
                stats.redecided += 1
                guard attempt < Self.attempts else {
                    throw EditLogError(.conflict, "the hub moved on under this write \(Self.attempts) times (other nodes append fast): try again",
                                       at: store.location.description)
                }
                attempt += 1
            }
        }
    }

    /// The commit gate: the referenced attachment bytes first (so a node that catches up finds them), then the events,
    /// all or nothing, at the positions the replica gave them.
    func push(_ events: [RecordedEvent], blob: (String) throws -> [UInt8]?) throws {
        var sent = Set<String>()
        for e in events {
            for sha in e.blobReferences where sent.insert(sha).inserted {
                guard let bytes = try blob(sha) else { continue }
                _ = try Self.blocking { [store] in try await store.putBlob(bytes) }
            }
        }
        let batch = events.map { EventAppend(recorded: $0, expected: .exact($0.streamVersion - 1)) }
        let after = events[0].position - 1
        let result = Result { () throws(EditLogError) -> [AppendOutcome] in try Self.blocking { [store] in try await store.append(batch, after: after) } }
        if case .failure(let error) = result, error.kind == .conflict { hubMoved = true }
        let outcomes = try result.get()
        for (outcome, e) in zip(outcomes, events) {
            guard case .appended(let stored) = outcome, stored.position == e.position, stored.hash == e.hash else {
                throw EditLogError(.corrupt, "the hub did not store event \(e.id.lowercasedString) as its replica did", at: "position \(e.position)")
            }
        }
    }

    // MARK: Catch-up

    public func refresh() throws { try catchUp() }

    /// Brings the replica up to the hub's head; returns the position reached.
    @discardableResult
    public func catchUp() throws(EditLogError) -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        return try catchUpLocked()
    }

    @discardableResult
    private func catchUpLocked() throws(EditLogError) -> Int64 {
        var head = try replica.head().position
        while true {
            let from = head
            let batch = try Self.blocking { [store] in try await store.events(after: from, limit: Self.catchUpBatch) }
            guard let last = batch.last else { break }
            try replica.follow(batch, fetchBlob: { [store] sha in try Self.fetchBlob(store, sha) })
            head = last.position
        }
        return head
    }

    /// Starts the catch-up subscription: a thread that catches up when the store notifies a commit and every `poll`
    /// seconds (the fallback when notifications stop: a restarted server, a lost connection).
    public func startFollowing(poll: Double = 1) {
        listener = Task { [store, wake] in await store.listen { wake.signal() } }
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + poll)
                if stopped.load(ordering: .acquiring) { break }
                do { try catchUp() } catch {
                    FileHandle.standardError.write(Data("editlog: catch-up failed (retrying): \(error)\n".utf8))
                }
            }
        }
        thread.name = "editlog.hub.catch-up"
        thread.start()
        follower = thread
    }

    /// Stops the subscription and closes the replica and the store's client.
    public func close() {
        stopped.store(true, ordering: .releasing)
        listener?.cancel()
        wake.signal()
        while let t = follower, !t.isFinished { usleep(1000) }
        replica.setCommitGate(nil)
        replica.close()
        store.close()
    }

    // MARK: Waiting on the store

    /// Runs `op` and waits for it: for the synchronous code the replica's gate and catch-up run in (a serve edit's
    /// queue, a command's main thread, the catch-up thread), never a task of the cooperative pool.
    /// Bounded: a call on a connection the server dropped (a restart) can wait for ever; after `timeout` seconds it is
    /// an `.io` error and the caller goes on (a write fails, a catch-up is tried again).
    static func blocking<T: Sendable>(timeout: Double = 10, _ op: @escaping @Sendable () async throws -> T) throws(EditLogError) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: HubExecutor.shared) {
            do { box.result = .success(try await op()) } catch {
                box.result = .failure(error as? EditLogError ?? EditLogError(.io, "\(error)"))
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success else {
            throw EditLogError(.io, "PostgreSQL did not answer within \(Int(timeout)) s (is the server restarting?)")
        }
        return try box.result!.get()
    }
}

/// Where the store's calls that synchronous code waits on run: Dispatch's pool, which grows while threads wait, not the
/// cooperative pool (as many threads as cores: a caller waiting there could leave the call it waits for no thread).
final class HubExecutor: TaskExecutor {
    static let shared = HubExecutor()
    private let queue = DispatchQueue(label: "editlog.hub.store", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, EditLogError>?
}
