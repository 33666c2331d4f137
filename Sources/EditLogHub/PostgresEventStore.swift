import EditLogCore
import EditLogStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The hub's event store on PostgreSQL: the store contract (`EventStoreEngine`) with the columns, the chain and the
/// rules of the SQLite log file.
///
/// - Positions are gap-free under appenders in any number of processes: a sequence is not (a rolled-back transaction
///   burns its numbers), so every append (`editlog_append`, one statement: `PostgresSchema.version2`) locks the one row
///   of `editlog_head` (`SELECT … FOR UPDATE`) and takes the positions after it; a trigger also refuses rows that do not
///   continue the log without a gap.
/// - Isolation is READ COMMITTED, PostgreSQL's default, on purpose: the head lock serializes appenders, and each
///   statement after it sees every append committed before (a REPEATABLE READ snapshot, taken before the lock was
///   granted, would not, and would fail the append instead).
/// - Append-only: triggers refuse UPDATE, DELETE and TRUNCATE on `events`, `blobs` and `editlog_meta` (even for the
///   owner), and the `editlog_appender` role that nodes connect as has no UPDATE or DELETE grant on them.
/// - The chain is computed where positions are assigned, inside `editlog_append`, with `EventHash`'s encoding over
///   the same canonical payload bytes, so the same events have the same hashes in both engines.
public final class PostgresEventStore: EventStoreEngine {
    public let location: PostgresLocation
    public let logId: String
    public let format: Int
    let client: PostgresClient
    let runner: Task<Void, Never>
    let clock: any LogClock
    /// Quiet: every failure reaches the caller as an `EditLogError`; the pool's retries are not the user's business.
    static let logger = Logger(label: "editlog.hub.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The role serve nodes log in through (granted to their login role): it may read, insert events and blobs and
    /// move the head, nothing else.
    public static let appenderRole = "editlog_appender"
    /// The channel a committed append notifies, with the new head position as its payload.
    public static let channel = "editlog_events"

    init(location: PostgresLocation, client: PostgresClient, runner: Task<Void, Never>, logId: String, format: Int, clock: any LogClock) {
        self.location = location; self.client = client; self.runner = runner; self.logId = logId; self.format = format; self.clock = clock
    }

    /// Connects once (so a wrong host, database or password fails at once, with the server's words, rather than
    /// after the pool's retries), then starts the client.
    static func start(_ location: PostgresLocation) async throws(EditLogError) -> (PostgresClient, Task<Void, Never>) {
        try await wrap(location, "connect") {
            let probe = try await PostgresConnection.connect(configuration: location.connectionConfiguration, id: 0, logger: logger)
            try await probe.close()
        }
        let client = PostgresClient(configuration: location.configuration, backgroundLogger: logger)
        return (client, Task { await client.run() })
    }

    /// Creates a hub store in an empty database: the tables, triggers and role, the log's id and `initial` (a log's
    /// events copied as they are: `editlog hub init`), in one transaction. Fails, changing nothing, when the database
    /// already holds a store or an initial event does not append.
    /// `schemaVersion`: the schema made (tests make an older one, to open it).
    public static func create(_ location: PostgresLocation, logId: String, initial: [EventAppend] = [], initialBlobs: [[UInt8]] = [],
                              clock: any LogClock = SystemClock(), schemaVersion: Int = PostgresSchema.versions.count) async throws(EditLogError) -> PostgresEventStore {
        let (client, runner) = try await start(location)
        do throws(EditLogError) {
            try await wrap(location, "create the hub store") {
                try await client.withTransaction(logger: logger) { conn in
                    let exists = try await conn.query("SELECT to_regclass('editlog_meta') IS NOT NULL", logger: logger).collect().first?.decode(Bool.self) ?? false
                    if exists {
                        throw EditLogError(.conflict, "\(location) already holds an EditLog store; EditLog never overwrites a log")
                    }
                    for statement in PostgresSchema.statements { try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                    try await conn.query("INSERT INTO editlog_meta (key, value) VALUES ('log_id', \(logId)), ('format', \(String(EventStore.formatVersion)))", logger: logger)
                    try await conn.query("INSERT INTO editlog_head (only_row, position, hash) VALUES (true, 0, \(Data(EventHash.genesis)))", logger: logger)
                    try await upgrade(conn, from: 1, to: schemaVersion, clock: clock)
                    _ = try await append(initial, conn, logId: logId, clock: clock)
                    for blob in initialBlobs { _ = try await putBlobRows(blob, conn) }
                }
            }
        } catch {
            runner.cancel()
            throw error
        }
        return PostgresEventStore(location: location, client: client, runner: runner, logId: logId, format: EventStore.formatVersion, clock: clock)
    }

    /// Opens a hub store, refusing a database that holds none or one written by a newer version.
    public static func open(_ location: PostgresLocation, clock: any LogClock = SystemClock()) async throws(EditLogError) -> PostgresEventStore {
        let (client, runner) = try await start(location)
        do throws(EditLogError) {
            let meta = try await wrap(location, "open the hub store") {
                let exists = try await client.query("SELECT to_regclass('editlog_meta') IS NOT NULL", logger: logger).collect().first?.decode(Bool.self) ?? false
                guard exists else { throw EditLogError(.notFound, "no EditLog store at \(location); create one with `editlog hub init`") }
                var meta: [String: String] = [:]
                for try await (k, v) in try await client.query("SELECT key, value FROM editlog_meta", logger: logger).decode((String, String).self) { meta[k] = v }
                return meta
            }
            guard let id = meta["log_id"], let format = meta["format"].flatMap(Int.init) else {
                throw EditLogError(.corrupt, "\(location) has no log id or format in editlog_meta: not an EditLog store")
            }
            guard format <= EventStore.formatVersion else {
                throw EditLogError(.unsupported, "\(location) was written in format \(format); this editlog reads up to \(EventStore.formatVersion): upgrade editlog")
            }
            let version = PostgresSchema.version(meta)
            guard version <= PostgresSchema.versions.count else {
                throw EditLogError(.unsupported, "\(location) has hub schema \(version); this editlog knows up to \(PostgresSchema.versions.count): upgrade editlog")
            }
            if version < PostgresSchema.versions.count {
                try await wrap(location, "upgrade the hub store's schema from version \(version) (connect once as the role that made the store)") {
                    try await client.withTransaction(logger: logger) { conn in
                        // One upgrader at a time; a second finds the work done.
                        try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended('editlog schema', 0))", logger: logger)
                        var meta: [String: String] = [:]
                        for try await (k, v) in try await conn.query("SELECT key, value FROM editlog_meta", logger: logger).decode((String, String).self) { meta[k] = v }
                        try await upgrade(conn, from: PostgresSchema.version(meta), to: PostgresSchema.versions.count, clock: clock)
                    }
                }
            }
            return PostgresEventStore(location: location, client: client, runner: runner, logId: id, format: format, clock: clock)
        } catch {
            runner.cancel()
            throw error
        }
    }

    /// Runs the schema's versions after `from` up to `to`, each recorded in `editlog_meta` (`PostgresSchema.metaKey`).
    static func upgrade(_ conn: PostgresConnection, from: Int, to: Int, clock: any LogClock) async throws {
        guard from < to else { return }
        for n in (from + 1)...to {
            for statement in PostgresSchema.versions[n - 1] { try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            try await conn.query("INSERT INTO editlog_meta (key, value) VALUES (\(PostgresSchema.metaKey(n)), \(Timestamp.format(milliseconds: clock.now())))",
                                 logger: logger)
        }
    }

    /// Calls `wake` on every committed append (`NOTIFY` on `channel`), on a connection of its own, until the task is
    /// cancelled; reconnects after `retry` seconds when the connection fails (the server restarted). Also calls `wake`
    /// once connected, for what was appended while no connection listened.
    /// `lost` is called when the connection cannot be made (the server stopped or is unreachable): the first sign of
    /// an outage, before any call times out (a connection that ends is made again first: a restart is not an outage).
    /// `connected` is called each time the connection is made: the server answers again.
    /// `wake` gets the head a notification names (nil for the first call after each connection).
    public func listen(retry: Double = 1, lost: @escaping @Sendable () -> Void = {}, connected: @escaping @Sendable () -> Void = {},
                       _ wake: @escaping @Sendable (Int64?) -> Void) async {
        let location = self.location
        while !Task.isCancelled {
            do {
                let conn: PostgresConnection
                do { conn = try await PostgresConnection.connect(configuration: location.connectionConfiguration, id: 1, logger: Self.logger) } catch {
                    if !Task.isCancelled { lost() }
                    throw error
                }
                connected()
                do {
                    try await withTaskCancellationHandler {
                        try await conn.listen(on: Self.channel) { notifications in
                            wake(nil)
                            for try await n in notifications { wake(Int64(n.payload)) }
                        }
                    } onCancel: { conn.close().whenComplete { _ in } }
                } catch {}
                try? await conn.close()
            } catch {}
            try? await Task.sleep(for: .seconds(retry))
        }
    }

    /// Stops the client (its connections close).
    public func close() { runner.cancel() }

    deinit { runner.cancel() }

    // MARK: The contract

    public func append(_ batch: [EventAppend], after expectedHead: Int64?) async throws(EditLogError) -> [AppendOutcome] {
        guard !batch.isEmpty else { return [] }
        let logId = self.logId, clock = self.clock
        return try await Self.wrap(location, "append") {
            // One statement, one round trip, committed on its own: the head lock is held inside it and its commit only.
            if batch.count <= Self.appendRows {
                return try await Self.appendCall(batch, logId: logId, clock: clock, after: expectedHead,
                                             held: { ms in self.serialSection.withLock { $0.add(ms, events: batch.count) } }) { query in
                    // On a leased connection, released whatever happens: `PostgresClient.query` kept the lease of a
                    // call the function refused (the pool ran dry under concurrent conflicts).
                    try await client.withConnection { conn in try await conn.query(query, logger: Self.logger).collect() }
                }
            }
            return try await client.withTransaction(logger: Self.logger) { conn in
                try await Self.append(batch, conn, logId: logId, clock: clock, after: expectedHead)
            }
        }
    }

    /// The store's serial section as this process saw it: how long each of its appends held the head's lock. Measured
    /// as the call of `editlog_append`, from its send to its answer (its commit included), less the time it waited for
    /// the lock (the function reports it): an upper bound, by one network round trip. One store's ceiling follows
    /// from it: every append of every node takes its turn there.
    public let serialSection = Mutex(SerialSection())

    public struct SerialSection: Sendable {
        public private(set) var appends = 0
        public private(set) var events = 0
        public private(set) var heldMs = 0.0
        /// Each append's time held, in ms (the first 200,000).
        public private(set) var samples: [Double] = []

        mutating func add(_ ms: Double, events n: Int) {
            appends += 1; events += n; heldMs += ms
            if samples.count < 200_000 { samples.append(ms) }
        }

        /// `p` (0…1) of the appends' times held, in ms.
        public func percentile(_ p: Double) -> Double { Self.percentile(samples, p) }

        /// `p` (0…1) of `samples` (nearest rank); 0 for none.
        public static func percentile(_ samples: [Double], _ p: Double) -> Double {
            guard !samples.isEmpty else { return 0 }
            let sorted = samples.sorted()
            return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
        }
    }

    /// Events per call of `editlog_append` (a longer batch, `hub init`'s, is appended in calls of this many, in one
    /// transaction, and is not counted in the serial section).
    static let appendRows = 1000
    /// The size of a stored blob piece.
    static let pieceBytes = Int(BlobStorage.inlineLimit)

    /// A batch of any length inside a transaction (`create`'s initial events, a long batch): calls of `appendRows`
    /// events; the head checked by the first (the lock is then held to the commit).
    static func append(_ batch: [EventAppend], _ conn: PostgresConnection, logId: String, clock: any LogClock,
                       after expectedHead: Int64? = nil) async throws -> [AppendOutcome] {
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(batch.count)
        var after = expectedHead
        for start in stride(from: 0, to: batch.count, by: appendRows) {
            outcomes += try await appendCall(Array(batch[start..<min(batch.count, start + appendRows)]), logId: logId, clock: clock, after: after) {
                try await conn.query($0, logger: logger).collect()
            }
            after = nil
        }
        return outcomes
    }

    /// One call of `editlog_append` (PostgresSchema.version2), run by `run`: the batch's columns as arrays; its answer,
    /// one row per event, as outcomes. The function's refusals come out in the words of the rules both engines apply
    /// (`StoreHead.check`, `ExpectedVersion.check`).
    static func appendCall(_ batch: [EventAppend], logId: String, clock: any LogClock, after expectedHead: Int64?,
                           held: (Double) -> Void = { _ in },
                           _ run: (PostgresQuery) async throws -> [PostgresRow]) async throws -> [AppendOutcome] {
        // An id repeated within the batch is sent once; its later copies are stored where the first went.
        var firstOf: [UUID: Int] = [:], sent: [Int] = []
        for i in batch.indices where firstOf[batch[i].id] == nil { firstOf[batch[i].id] = sent.count; sent.append(i) }
        let n = sent.count
        var ids: [UUID] = [], streams: [String] = [], expected: [Int64] = [], types: [String] = [], payloads: [ByteBuffer] = []
        var actors: [String] = [], devices: [String] = [], sessions: [String] = [], causes: [String] = [], clientTimes: [String] = []
        var recorded: [String] = [], originLogs: [String] = [], originPositions: [Int64] = [], originHashes: [ByteBuffer] = [], absent: [Int32] = []
        for i in sent {
            let e = batch[i]
            ids.append(e.id); streams.append(e.stream); types.append(e.type); payloads.append(ByteBuffer(bytes: e.canonicalPayload))
            switch e.expected {
            case .any: expected.append(-1)
            case .noStream: expected.append(-2)
            case .exact(let v): expected.append(v)
            }
            actors.append(e.actor); devices.append(e.device); sessions.append(e.session ?? ""); causes.append(e.cause)
            clientTimes.append(e.clientTime ?? "")
            recorded.append(e.recordedTime ?? Timestamp.format(milliseconds: clock.now()))
            originLogs.append(e.origin?.logId ?? ""); originPositions.append(e.origin?.position ?? 0)
            originHashes.append(ByteBuffer(bytes: e.origin?.hash ?? []))
            absent.append((e.session == nil ? 1 : 0) | (e.clientTime == nil ? 2 : 0) | (e.origin == nil ? 4 : 0))
        }
        let query: PostgresQuery = """
            SELECT out_position, out_version, out_hash, out_stored, out_waited_ms FROM editlog_append(\(logId), \(expectedHead), \(ids), \(streams),
                \(expected), \(types), \(payloads), \(actors), \(devices), \(sessions), \(causes), \(clientTimes), \(recorded), \(originLogs),
                \(originPositions), \(originHashes), \(absent))
            """
        let sentAt = DispatchTime.now().uptimeNanoseconds
        var rows: [(Int64, Int64?, Data?, Bool, Double)] = []
        rows.reserveCapacity(n)
        do {
            for row in try await run(query) { rows.append(try row.decode((Int64, Int64?, Data?, Bool, Double).self)) }
        } catch let error as PSQLError {
            let detail = (error.serverInfo?[.detail] ?? "").split(separator: " ").compactMap { Int64($0) }
            switch error.serverInfo?[.sqlState] {
            case "EL001" where detail.count == 1:
                try StoreHead.check(detail[0], expected: expectedHead)
            case "EL002" where detail.count == 2 && Int(detail[0]) < n:
                let e = batch[sent[Int(detail[0])]]
                try e.expected.check(stream: e.stream, current: detail[1])
            default: break
            }
            throw error
        }
        if let waited = rows.first?.4 { held(max(0, Double(DispatchTime.now().uptimeNanoseconds - sentAt) / 1e6 - waited)) }
        guard rows.count == n else { throw EditLogError(.corrupt, "editlog_append answered \(rows.count) rows for \(n) events") }
        return batch.indices.map { i in
            let k = firstOf[batch[i].id]!, e = batch[i], (position, version, hash, stored, _) = rows[k]
            guard !stored, sent[k] == i, let version, let hash else { return .alreadyStored(position: position) }
            let h = [UInt8](hash)
            return .appended(e.recorded(position: position, streamVersion: version, recorded: recorded[k],
                                        origin: e.isOwn(at: position, in: logId) ? EventOrigin(logId: logId, position: position, hash: h) : e.origin!,
                                        hash: h))
        }
    }

    public func events(after position: Int64, limit: Int) async throws(EditLogError) -> [RecordedEvent] {
        try await Self.wrap(location, "read events") {
            try await Self.decodeEvents(location, try await client.query(
                "SELECT \(unescaped: Self.columns) FROM events WHERE position > \(position) ORDER BY position LIMIT \(Int64(max(0, limit)))", logger: Self.logger))
        }
    }

    public func events(inStream stream: String) async throws(EditLogError) -> [RecordedEvent] {
        try await Self.wrap(location, "read stream \(stream)") {
            try await Self.decodeEvents(location, try await client.query(
                "SELECT \(unescaped: Self.columns) FROM events WHERE stream = \(stream) ORDER BY stream_version", logger: Self.logger))
        }
    }

    public func head() async throws(EditLogError) -> StoreHead {
        try await Self.wrap(location, "read the head") {
            let rows = try await client.query("SELECT position, hash FROM editlog_head", logger: Self.logger).collect()
            guard let row = rows.first else { throw EditLogError(.corrupt, "\(location): editlog_head has no row") }
            let (p, h) = try row.decode((Int64, Data).self)
            return StoreHead(position: p, hash: [UInt8](h))
        }
    }

    @discardableResult
    public func putBlob(_ bytes: [UInt8]) async throws(EditLogError) -> Bool {
        try await Self.wrap(location, "store a blob") {
            try await client.withTransaction(logger: Self.logger) { conn in try await Self.putBlobRows(bytes, conn) }
        }
    }

    /// Stores a blob's pieces inside a transaction, unless its bytes are there already.
    static func putBlobRows(_ bytes: [UInt8], _ conn: PostgresConnection) async throws -> Bool {
        let sha = EventHash.sha256(bytes)
        // Concurrent puts of the same bytes: the second waits for the first and then finds it.
        try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\(Hex.encode(sha)), 0))", logger: logger)
        if try await conn.query("SELECT 1 FROM blobs WHERE sha256 = \(Data(sha)) AND piece = 0", logger: logger).collect().first != nil { return false }
        var piece: Int32 = 0, offset = 0
        repeat {
            let end = min(bytes.count, offset + pieceBytes)
            try await conn.query("INSERT INTO blobs (sha256, piece, size, bytes) VALUES (\(Data(sha)), \(piece), \(Int64(bytes.count)), \(Data(bytes[offset..<end])))",
                                 logger: logger)
            piece += 1; offset = end
        } while offset < bytes.count
        return true
    }

    public func blob(sha256: [UInt8]) async throws(EditLogError) -> [UInt8]? {
        let hex = Hex.encode(sha256)
        return try await Self.wrap(location, "read blob \(hex)") {
            var out: [UInt8] = [], size: Int64 = -1, next: Int32 = 0
            for try await (piece, total, bytes) in try await client.query(
                "SELECT piece, size, bytes FROM blobs WHERE sha256 = \(Data(sha256)) ORDER BY piece", logger: Self.logger).decode((Int32, Int64, Data).self) {
                guard piece == next else { throw EditLogError(.corrupt, "blob \(hex) lacks piece \(next)", at: location.description) }
                size = total; next += 1
                out += bytes
            }
            guard size >= 0 else { return nil }
            guard Int64(out.count) == size, EventHash.sha256(out) == sha256 else {
                throw EditLogError(.corrupt, "blob \(hex) does not hash to its name (\(out.count) of \(size) bytes)", at: location.description)
            }
            return out
        }
    }

    // MARK: Verify

    /// What a check of the stored chain found: where it ends, and the first position that is wrong, if any.
    public struct ChainCheck: Sendable {
        public var head: StoreHead
        public var firstBadPosition: Int64?
        public var problem: String?
    }

    /// Recomputes the chain over every stored row (the payload as stored, not decoded and encoded again) and checks
    /// the head: reports the first event whose hash is not its own, or the first gap, by its position.
    public func checkChain(progress: ((Int64, Int64) -> Void)? = nil) async throws(EditLogError) -> ChainCheck {
        let total = try await head()
        var previous = EventHash.genesis, expected: Int64 = 1
        var encoder = EventHash.Encoder()
        func broken(_ position: Int64, _ problem: String) -> ChainCheck { ChainCheck(head: total, firstBadPosition: position, problem: problem) }
        while expected <= total.position {
            let from = expected
            let rows: [PostgresRow] = try await Self.wrap(location, "read events") {
                try await client.query("SELECT \(unescaped: Self.columns) FROM events WHERE position >= \(from) ORDER BY position LIMIT 5000", logger: Self.logger).collect()
            }
            guard !rows.isEmpty else { break }
            for row in rows {
                let s = try Self.stored(row, location)
                guard s.values.position == expected else {
                    return broken(expected, "position \(expected) is missing: the next event is at \(s.values.position)")
                }
                guard EventHash.compute(using: &encoder, previous: previous, s.values) == s.hash else {
                    return broken(expected, "position \(expected): the event does not hash to its stored hash: it was altered")
                }
                previous = s.hash
                expected += 1
            }
            progress?(expected - 1, total.position)
        }
        guard expected - 1 == total.position, previous == total.hash else {
            return broken(expected, "the head (position \(total.position)) is not the last event (position \(expected - 1))")
        }
        return ChainCheck(head: total)
    }

    /// `checkChain`, a break thrown as `.corrupt`.
    public func verifyChain(progress: ((Int64, Int64) -> Void)? = nil) async throws(EditLogError) -> StoreHead {
        let check = try await checkChain(progress: progress)
        if let problem = check.problem { throw EditLogError(.corrupt, problem, at: location.description) }
        return check.head
    }

    /// Reads every stored blob back against its SHA-256 name (`blob(sha256:)` checks it); returns how many there are.
    public func verifyBlobs() async throws(EditLogError) -> Int64 {
        let names: [Data] = try await Self.wrap(location, "list blobs") {
            var out: [Data] = []
            for try await name in try await client.query("SELECT DISTINCT sha256 FROM blobs", logger: Self.logger).decode(Data.self) { out.append(name) }
            return out
        }
        for name in names { _ = try await blob(sha256: [UInt8](name)) }
        return Int64(names.count)
    }

    // MARK: Rows

    static let columns = "position, id, stream, stream_version, type, payload, actor, device, session, cause, client_time, recorded_time, origin_log, origin_position, origin_hash, hash"

    /// A stored row as the chain hashes it, and its stored hash.
    static func stored(_ row: PostgresRow, _ location: PostgresLocation) throws(EditLogError) -> (values: EventHash.Values, hash: [UInt8]) {
        do {
            let r = row.makeRandomAccess()
            let values = EventHash.Values(
                position: try r[0].decode(Int64.self), id: try r[1].decode(UUID.self), stream: try r[2].decode(String.self),
                streamVersion: try r[3].decode(Int64.self), type: try r[4].decode(String.self), payload: [UInt8](try r[5].decode(Data.self)),
                actor: try r[6].decode(String.self), device: try r[7].decode(String.self), session: try r[8].decode(String?.self),
                cause: try r[9].decode(String.self), clientTime: try r[10].decode(String?.self), recordedTime: try r[11].decode(String.self),
                originLog: try r[12].decode(String.self), originPosition: try r[13].decode(Int64.self),
                originHash: try r[14].decode(Data?.self).map { [UInt8]($0) })
            return (values, [UInt8](try r[15].decode(Data.self)))
        } catch let e as EditLogError {
            throw e
        } catch {
            throw EditLogError(.corrupt, "an event row cannot be read: \(error)", at: location.description)
        }
    }

    static func decodeEvents(_ location: PostgresLocation, _ rows: PostgresRowSequence) async throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        for try await row in rows {
            let (v, hash) = try stored(row, location)
            let payload: JSONValue
            do { payload = try JSONParser.parse(v.payload) } catch {
                throw EditLogError(.corrupt, "the payload of the event at position \(v.position) is not JSON: \(error)", at: location.description)
            }
            out.append(RecordedEvent(position: v.position, id: v.id, stream: v.stream, streamVersion: v.streamVersion, type: v.type, payload: payload,
                                     actor: v.actor, device: v.device, session: v.session, cause: v.cause, clientTime: v.clientTime,
                                     recordedTime: v.recordedTime,
                                     origin: EventOrigin(logId: v.originLog, position: v.originPosition, hash: v.originHash ?? hash), hash: hash))
        }
        return out
    }

    /// Runs `body`, every error coming out as an `EditLogError` naming the store and what was being done.
    static func wrap<T>(_ location: PostgresLocation, _ what: String, _ body: () async throws -> T) async throws(EditLogError) -> T {
        do {
            return try await body()
        } catch {
            throw mapped(error, location, what)
        }
    }

    static func mapped(_ error: any Error, _ location: PostgresLocation, _ what: String) -> EditLogError {
        if let e = error as? EditLogError { return e }
        if let t = error as? PostgresTransactionError {
            if let c = t.closureError { return mapped(c, location, what) }
            if let c = t.beginError ?? t.commitError { return mapped(c, location, what) }
        }
        if let p = error as? PSQLError {
            if let info = p.serverInfo, let message = info[.message] {
                let state = info[.sqlState] ?? "?"
                // 40001/40P01: serialization failure or deadlock; 23505: a unique row another appender wrote first.
                // 08…, 57P01-57P03: the connection failed or the server is shutting down or starting: try again later.
                let kind: EditLogError.Kind = ["40001", "40P01", "23505"].contains(state) ? .conflict
                    : state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state) ? .unavailable
                    : (state.hasPrefix("42") || state == "P0001" ? .invalidInput : .io)
                return EditLogError(kind, "PostgreSQL refused to \(what): \(message) (SQLSTATE \(state))", at: location.description)
            }
            if p.code == .connectionError || p.code == .serverClosedConnection {
                return EditLogError(.unavailable, "cannot \(what): no PostgreSQL server answers at \(location.host):\(location.port) (is it running and listening there?)",
                                    at: location.description)
            }
            return EditLogError(.io, "cannot \(what): PostgreSQL \(p.code)", at: location.description)
        }
        return EditLogError(.io, "cannot \(what): \(error)", at: location.description)
    }
}
