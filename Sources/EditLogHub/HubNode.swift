import EditLog
import EditLogCore
import EditLogStore
import Foundation
import Synchronization

/// A node of a hub on PostgreSQL: the hub's store of record, and a local copy of it in a SQLite file (the read
/// models: `EditLog.createLocalCopy`; not an Esri replica) that a catch-up subscription keeps up with the store's head.
///
/// - **Writes** (`write`): decided on the local copy caught up to the hub's head, in one local transaction; before
///   it commits, its commit gate appends the transaction's events to the hub with their expected stream versions
///   and the head they were decided on. The hub holds them at the same positions with the same hashes, and then the
///   local copy commits: the node answers with its own projection holding what it appended (read-your-writes). If
///   the hub moved on meanwhile (another node appended), nothing is appended, the local copy rolls back, catches up
///   and decides again, at most `attempts` times.
/// - **Catch-up** (`startFollowing`): woken by the store's NOTIFY at each commit, and every `poll` seconds anyway.
///   `refresh` waits for it, without taking the node's lock.
/// - **When PostgreSQL is unreachable** reads go on from the local copy (`staleness` says since when it is known to
///   hold the store's head); writes and reads that need the store's head are refused as `.unavailable` (ArcGIS's
///   503) at once while the follower's last call failed, and every wait (the node's lock, a call, a catch-up) is
///   bounded and ends when the node stops.
/// - **Restart**: the local copy's file is kept (`DIR/<log id>.editlog`); a node catches up from its last position.
///   A local copy that is not a prefix of the hub (deleted, damaged, another hub's) is built again from the store.
public final class HubNode: LogWriter, @unchecked Sendable {
    public let store: PostgresEventStore
    /// The local copy: every read of the node, and the writer writes go through (`write`).
    public let local: EditLog
    public let localPath: String
    /// How many times a write is decided again when the hub moved on before its append.
    public static let attempts = 8
    /// How many events a catch-up reads per round trip.
    static let catchUpBatch = 2000
    /// The longest a call to the store is waited for (a lost server leaves a lease or a query waiting for ever).
    static let callTimeout = 8.0
    /// The longest a write waits for the node's lock, and `refresh` for the local copy to reach the store's head:
    /// with `callTimeout`, a request gets its answer (503 at worst) within 15 s while PostgreSQL is unreachable.
    static let waitTimeout = 5.0

    /// One writer of the local copy at a time: the node's writes and its catch-up.
    private let lock = NSLock()
    /// Set by the gate when the hub refused the append because it had moved on (a write to decide again).
    private var hubMoved = false
    /// Set by the gate when the store did not answer the append (the write's answer is then this, whatever the
    /// local copy's transaction made of it).
    private var gateFailure: EditLogError?
    private var listener: Task<Void, Never>?
    private var follower: Thread?
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once by the follower thread as it ends, for `close` to wait on.
    private let followerEnded = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    /// Signalled when the local copy moves on (a catch-up's batch, a write committed): `refresh` waits on it.
    private let moved = NSCondition()
    /// What the node knows of its store (under `moved`'s lock).
    private var contact = Contact()
    /// Writes committed, and decisions made again because the hub had moved on (since the node opened).
    public private(set) var stats = (writes: 0, redecided: 0)

    struct Contact {
        /// The local copy's last position.
        var localHead: Int64 = 0
        /// When the local copy was last known to hold the store's head (an answer of the store said so).
        var inSyncAt = Date()
        /// Since when the store's calls fail (nil: its last call was answered).
        var failingSince: Date?
        /// Heads the store notified that the local copy did not hold yet, with when (`DispatchTime` nanoseconds).
        var awaited: [(head: Int64, at: UInt64)] = []
        /// `HubNode.lag`.
        var lagMs: [Double] = []
        /// `HubNode.cpu`.
        var cpu = CPUSplit()
    }

    /// The node's CPU time on the threads that write its local copy, split by what it was for: deciding its own
    /// writes (every attempt, a redone one included; the gate's wait for the store is not CPU) and following the
    /// store's events that other nodes appended (the catch-up's apply), with the events each produced.
    public struct CPUSplit: Sendable {
        public var decideNs: UInt64 = 0, decidedEvents = 0
        public var followNs: UInt64 = 0, followedEvents = 0
        /// Milliseconds of CPU per event decided, and per event followed.
        public var decideMsPerEvent: Double { decidedEvents == 0 ? 0 : Double(decideNs) / 1e6 / Double(decidedEvents) }
        public var followMsPerEvent: Double { followedEvents == 0 ? 0 : Double(followNs) / 1e6 / Double(followedEvents) }
    }

    /// The calling thread's CPU time, in ns.
    static func threadCPU() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    private init(store: PostgresEventStore, local: EditLog, localPath: String) {
        self.store = store; self.local = local; self.localPath = localPath
    }

    /// The local copy's file of `store` in `directory`.
    public static func localPath(of store: PostgresEventStore, in directory: String) -> String {
        (directory as NSString).appendingPathComponent("\(store.logId).editlog")
    }

    /// Opens the node's local copy of `store` in `directory` (created if needed), catches it up and sets its gate.
    public static func open(_ store: PostgresEventStore, cacheDirectory directory: String, clock: any LogClock = SystemClock(),
                            ids: (any IDGenerator)? = nil) throws(EditLogError) -> HubNode {
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw EditLogError(.io, "cannot create the cache directory: \(error.localizedDescription)", at: directory)
        }
        let path = localPath(of: store, in: directory)
        let local = try openLocalCopy(store, at: path, clock: clock, ids: ids)
        let node = HubNode(store: store, local: local, localPath: path)
        local.setCommitGate { [unowned node] events, blob in try node.push(events, blob: blob) }
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

    /// The local copy at `path` if it is a prefix of the hub's log, else a new one (any old file removed).
    static func openLocalCopy(_ store: PostgresEventStore, at path: String, clock: any LogClock, ids: (any IDGenerator)?) throws(EditLogError) -> EditLog {
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
        return try EditLog.createLocalCopy(at: path, logId: store.logId, first: first, fetchBlob: { sha in try fetchBlob(store, sha) },
                                           clock: clock, ids: ids)
    }

    static func fetchBlob(_ store: PostgresEventStore, _ sha: String) throws(EditLogError) -> [UInt8]? {
        guard let digest = Hex.decode(sha) else { return nil }
        return try blocking { try await store.blob(sha256: digest) }
    }

    // MARK: Writes

    /// Runs `body` on the local copy caught up to the hub's head; its writes reach the hub before the local copy
    /// commits them (the gate). Decided again while the hub moves on under it, at most `attempts` times. While the
    /// store is unreachable, `.unavailable` (at once when the follower's last call failed).
    public func write<T>(_ body: (EditLog) throws -> T) throws -> T {
        try requireReachable()
        try lockBounded("a write")
        defer { lock.unlock() }
        var attempt = 1
        while true {
            let decidedAt = try catchUpLocked()
            hubMoved = false
            gateFailure = nil
            let cpu = Self.threadCPU()
            do {
                let result = try body(local)
                stats.writes += 1
                let head = try? local.head().position
                if let head { sawLocal(head, inSync: true) }
                spent(Self.threadCPU() - cpu, events: Int((head ?? decidedAt) - decidedAt), following: false)
                return result
            } catch {
                spent(Self.threadCPU() - cpu, events: 0, following: false)
                if let e = error as? EditLogError, e.kind == .unavailable { throw e }
                if let gateFailure { throw gateFailure }
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
    /// all or nothing, at the positions the local copy gave them.
    func push(_ events: [RecordedEvent], blob: (String) throws -> [UInt8]?) throws {
        do { try pushing(events, blob: blob) } catch let e as EditLogError where e.kind == .unavailable {
            gateFailure = e
            throw e
        }
    }

    private func pushing(_ events: [RecordedEvent], blob: (String) throws -> [UInt8]?) throws {
        var sent = Set<String>()
        for e in events {
            for sha in e.blobReferences where sent.insert(sha).inserted {
                guard let bytes = try blob(sha) else { continue }
                _ = try call { [store] in try await store.putBlob(bytes) }
            }
        }
        let batch = events.map { EventAppend(recorded: $0, expected: .exact($0.streamVersion - 1)) }
        let after = events[0].position - 1
        let result = Result { () throws(EditLogError) -> [AppendOutcome] in try call { [store] in try await store.append(batch, after: after) } }
        if case .failure(let error) = result, error.kind == .conflict { hubMoved = true }
        let outcomes = try result.get()
        for (outcome, e) in zip(outcomes, events) {
            guard case .appended(let stored) = outcome, stored.position == e.position, stored.hash == e.hash else {
                throw EditLogError(.corrupt, "the hub did not store event \(e.id.lowercasedString) as its local copy did", at: "position \(e.position)")
            }
        }
    }

    // MARK: Catch-up

    /// Waits until the local copy holds the store's head as it is now (one read of the head, no lock: the follower
    /// catches up), for a read that must see every write acknowledged before it. Without a follower, catches up here.
    public func refresh() throws {
        guard follower != nil else {
            try catchUp()
            return
        }
        try requireReachable()
        let target = try call { [store] in try await store.head().position }
        let deadline = Date(timeIntervalSinceNow: Self.waitTimeout)
        moved.lock()
        var behind = target - contact.localHead
        while behind > 0, !stopping, Date() < deadline {
            wake.signal()
            _ = moved.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.1)))
            behind = target - contact.localHead
        }
        moved.unlock()
        if behind <= 0 { return }
        if stopping { throw unavailable("this node is stopping") }
        throw unavailable("the local copy is \(behind) events behind the store after \(Int(Self.waitTimeout)) s")
    }

    /// Brings the local copy up to the hub's head; returns the position reached.
    @discardableResult
    public func catchUp() throws(EditLogError) -> Int64 {
        try lockBounded("a catch-up")
        defer { lock.unlock() }
        return try catchUpLocked()
    }

    @discardableResult
    private func catchUpLocked() throws(EditLogError) -> Int64 {
        var head = try local.head().position
        while true {
            let from = head
            let batch = try call { [store] in try await store.events(after: from, limit: Self.catchUpBatch) }
            guard let last = batch.last else { break }
            let cpu = Self.threadCPU()
            try local.follow(batch, fetchBlob: { [store] sha in try Self.fetchBlob(store, sha) })
            spent(Self.threadCPU() - cpu, events: batch.count, following: true)
            head = last.position
            sawLocal(head, inSync: false)
        }
        sawLocal(head, inSync: true)
        return head
    }

    /// Starts the catch-up subscription: a thread that catches up when the store notifies a commit and every `poll`
    /// seconds (the fallback when notifications stop: a restarted server, a lost connection).
    public func startFollowing(poll: Double = 1) {
        // A notification connection that cannot be made again is the first sign of an outage: writes fail fast
        // from then on. Its reconnection, or any call answered, is the first sign that the server is back: the
        // follower tries at once, and writes try again.
        listener = Task { [store, wake] in
            await store.listen(lost: { [weak self] in self?.storeFailed() }, connected: { [weak self] in self?.storeAnswered(wakeFollower: true) }) { [weak self] head in
                if let head { self?.notified(head) }
                wake.signal()
            }
        }
        let thread = Thread { [self] in
            defer { followerEnded.signal() }
            while !stopping {
                _ = wake.wait(timeout: .now() + poll)
                if stopping { break }
                do { try catchUp() } catch {
                    if !stopping { FileHandle.standardError.write(Data("editlog: catch-up failed (retrying): \(error)\n".utf8)) }
                }
            }
        }
        thread.name = "editlog.hub.catch-up"
        thread.start()
        follower = thread
    }

    /// Ends every wait of the node (its lock, a call, a refresh): they answer `.unavailable` from now on. `close`
    /// does it first; a server calls it when asked to stop, so requests in flight end at once.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        listener?.cancel()
        wake.signal()
        moved.broadcast()
    }

    /// Stops the node (`stop`), waits for the follower (its waits end within a tenth of a second), and closes the
    /// local copy and the store's client.
    public func close() {
        stop()
        if follower != nil {
            guard followerEnded.wait(timeout: .now() + 3) == .success else {
                // Still inside SQLite: the local copy stays open (the process is ending); its file is consistent.
                store.close()
                return
            }
            followerEnded.signal()  // a second close does not wait again
        }
        local.setCommitGate(nil)
        local.close()
        store.close()
    }

    // MARK: The store's reachability

    /// Seconds since the local copy was last known to hold the store's head: what a read answered from it may lack.
    /// About the follower's poll while the store answers; growing while it does not.
    public var staleness: Double? {
        moved.lock()
        defer { moved.unlock() }
        return max(0, Date().timeIntervalSince(contact.inSyncAt))
    }

    private var stopping: Bool { stopped.load(ordering: .acquiring) }

    private var failing: Bool {
        moved.lock()
        defer { moved.unlock() }
        return contact.failingSince != nil
    }

    /// `.unavailable` when the node stops, or when the follower's last call to the store failed (it keeps trying;
    /// without a follower every request tries).
    private func requireReachable() throws(EditLogError) {
        if stopping { throw unavailable("this node is stopping") }
        if follower != nil, failing { throw unavailable("writes and reads that need the store's head wait until it answers again") }
    }

    private func unavailable(_ what: String) -> EditLogError {
        moved.lock()
        let since = contact.failingSince, age = Date().timeIntervalSince(contact.inSyncAt)
        moved.unlock()
        let state = since.map { "PostgreSQL has not answered since \(Timestamp.format(milliseconds: Int64($0.timeIntervalSince1970 * 1000)))" } ?? "PostgreSQL is reachable"
        return EditLogError(.unavailable, "\(what): \(state); reads are answered from this node's local copy (\(String(format: "%.1f", age)) s behind at most); try again in a few seconds",
                            at: store.location.description)
    }

    /// Takes the node's lock, waiting at most `waitTimeout` (and not past `stop`).
    private func lockBounded(_ what: String) throws(EditLogError) {
        let deadline = Date(timeIntervalSinceNow: Self.waitTimeout)
        while !lock.lock(before: min(deadline, Date(timeIntervalSinceNow: 0.1))) {
            if stopping { throw unavailable("this node is stopping") }
            if Date() >= deadline { throw unavailable("\(what) waited \(Int(Self.waitTimeout)) s for this node (another write or a catch-up held it)") }
        }
        if stopping {
            lock.unlock()
            throw unavailable("this node is stopping")
        }
    }

    /// The local copy reached `head`; with `inSync`, a store's answer said that it holds the store's head.
    private func sawLocal(_ head: Int64, inSync: Bool) {
        moved.lock()
        contact.localHead = max(contact.localHead, head)
        if inSync { contact.inSyncAt = Date() }
        let now = DispatchTime.now().uptimeNanoseconds
        while let first = contact.awaited.first, first.head <= head {
            contact.awaited.removeFirst()
            if contact.lagMs.count < 200_000 { contact.lagMs.append(Double(now - first.at) / 1e6) }
        }
        moved.unlock()
        moved.broadcast()
    }

    /// The store notified a commit up to `head`: when the local copy is behind it, the time is kept until the local
    /// copy holds it (`lag`).
    private func notified(_ head: Int64) {
        moved.lock()
        let lastAwaited = contact.awaited.last?.head ?? 0
        if head > contact.localHead, contact.awaited.count < 10_000, head > lastAwaited {
            contact.awaited.append((head, DispatchTime.now().uptimeNanoseconds))
        }
        moved.unlock()
    }

    /// The catch-up lag measured here: for each commit of another node the store notified, the time from the
    /// notification to the local copy's commit of it, in ms (the first 200,000). A node's own commits are in its local
    /// copy before the store notifies them, and are not counted.
    public var lag: [Double] {
        moved.lock(); defer { moved.unlock() }
        return contact.lagMs
    }

    /// CPU spent deciding this node's writes against following the others' (`CPUSplit`).
    public var cpu: CPUSplit {
        moved.lock(); defer { moved.unlock() }
        return contact.cpu
    }

    /// Adds CPU time and the events it produced to what following, or deciding, cost.
    private func spent(_ ns: UInt64, events: Int, following: Bool) {
        moved.lock()
        if following { contact.cpu.followNs += ns; contact.cpu.followedEvents += events } else { contact.cpu.decideNs += ns; contact.cpu.decidedEvents += events }
        moved.unlock()
    }

    /// The store's serial section as this node's appends saw it (`PostgresEventStore.serialSection`).
    public var serialSection: PostgresEventStore.SerialSection { store.serialSection.withLock { $0 } }

    /// The node's figures since it opened, for `serve`'s last line (`tools/hub-load.py` reads them): writes, decisions
    /// made again, the head lock's time held by its appends (p50, p99, in all), the catch-up lag (p50, p99), and the
    /// CPU per event decided and per event followed (`cpu`).
    public var figures: JSONValue {
        let s = serialSection, lag = self.lag
        func ms(_ v: Double) -> JSONValue { .double((v * 1000).rounded() / 1000) }
        return ["writes": .int(Int64(stats.writes)), "redecided": .int(Int64(stats.redecided)),
                "headLockAppends": .int(Int64(s.appends)), "headLockEvents": .int(Int64(s.events)), "headLockMs": ms(s.heldMs),
                "headLockP50": ms(s.percentile(0.5)), "headLockP99": ms(s.percentile(0.99)),
                "lagCommits": .int(Int64(lag.count)), "lagP50": ms(PostgresEventStore.SerialSection.percentile(lag, 0.5)),
                "lagP99": ms(PostgresEventStore.SerialSection.percentile(lag, 0.99)),
                "decideCpuMsPerEvent": ms(cpu.decideMsPerEvent), "followCpuMsPerEvent": ms(cpu.followMsPerEvent),
                "decidedEvents": .int(Int64(cpu.decidedEvents)), "followedEvents": .int(Int64(cpu.followedEvents))]
    }

    /// The store answered; `wakeFollower` after an outage (the notification connection is back).
    private func storeAnswered(wakeFollower: Bool = false) {
        moved.lock(); contact.failingSince = nil; moved.unlock()
        if wakeFollower { wake.signal() }
    }

    private func storeFailed() {
        moved.lock(); if contact.failingSince == nil { contact.failingSince = Date() }; moved.unlock()
    }

    /// A call to the store from the node's synchronous code (`blocking`), whose outcome says whether the store is
    /// reachable: `.unavailable` (no answer in time, no connection, a server shutting down) marks it failing until a
    /// call succeeds; any other error (a conflict, a refusal) is the request's, thrown as it is.
    private func call<T: Sendable>(_ op: @escaping @Sendable () async throws -> T) throws(EditLogError) -> T {
        do {
            let value = try Self.blocking(timeout: Self.callTimeout, stopping: { self.stopping }, op)
            storeAnswered()
            return value
        } catch {
            if error.kind == .unavailable { storeFailed() }
            throw error
        }
    }

    // MARK: Waiting on the store

    /// Runs `op` and waits for it: for the synchronous code the local copy's gate and catch-up run in (a serve edit's
    /// queue, a command's main thread, the catch-up thread), never a task of the cooperative pool.
    /// Bounded: a call on a connection the server dropped (a restart) can wait for ever; after `timeout` seconds it is
    /// `.unavailable` and the caller goes on (a write fails, a catch-up is tried again). `stopping` is asked every
    /// tenth of a second: true ends the wait as `.unavailable`.
    static func blocking<T: Sendable>(timeout: Double = 10, stopping: () -> Bool = { false },
                                      _ op: @escaping @Sendable () async throws -> T) throws(EditLogError) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let task = Task(executorPreference: HubExecutor.shared) {
            do { box.result = .success(try await op()) } catch {
                box.result = .failure(error as? EditLogError ?? EditLogError(.io, "\(error)"))
            }
            done.signal()
        }
        let deadline = DispatchTime.now() + timeout
        while done.wait(timeout: min(deadline, .now() + 0.1)) != .success {
            if stopping() {
                task.cancel()
                throw EditLogError(.unavailable, "the node is stopping")
            }
            if DispatchTime.now() >= deadline {
                task.cancel()
                throw EditLogError(.unavailable, "PostgreSQL did not answer within \(Int(timeout)) s (is the server restarting or unreachable?)")
            }
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
