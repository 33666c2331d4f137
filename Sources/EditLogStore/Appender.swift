import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

/// What appending an imported event did.
public enum AppendOutcome: Sendable, Hashable {
    case appended(RecordedEvent)
    /// An event with the same id is stored at this position: nothing was written.
    case alreadyStored(position: Int64)
}

/// Appends events inside one write transaction: gap-free positions, per-stream versions with
/// optimistic concurrency, idempotency by event id, and the hash chain.
public struct Appender {
    let db: Database
    let logId: String
    let clock: any LogClock
    public let ids: any IDGenerator
    public private(set) var headPosition: Int64
    public private(set) var headHash: [UInt8]
    var versions: StreamVersions
    /// `PRAGMA data_version` when the transaction began (the cache is valid for this value only).
    let dataVersion: Int64
    var encoder = EventHash.Encoder()
    /// Where an event row's texts and blobs are bound from (`BindArena`).
    let arena = BindArena()
    /// The event INSERT, looked up in GRDB's cache once per transaction rather than once per event (the lookup
    /// hashed the whole SQL text).
    private var insertStatement: Statement?
    static let insertSQL = """
        INSERT INTO events (position, id, stream, stream_version, type, payload, actor, device, session, cause,
                            client_time, recorded_time, origin_log, origin_position, origin_hash, hash)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    /// Events appended by this transaction, in order (empty when `keepsAppended` is false).
    public private(set) var appended: [RecordedEvent] = []
    /// Whether `appended` keeps every event of the transaction. An import of a whole bundle (a million events in
    /// one transaction) turns it off: nothing reads that list there, and it grew by every event's payload.
    public var keepsAppended = true
    /// Streams whose version this transaction remembers at most, or nil for no bound (the next transaction's
    /// cache keeps at most `AppendCache.maxStreams`). An import of a whole bundle sets one: it meets every
    /// feature's stream once, and a forgotten version is read again from the stream's index.
    public var versionLimit: Int?

    init(db: Database, store: EventStore) throws {
        self.db = db
        self.logId = store.logId
        self.clock = store.clock
        self.ids = store.ids
        dataVersion = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0
        if let cached = store.appendCache.take(at: dataVersion) {
            headPosition = cached.headPosition
            headHash = cached.headHash
            versions = cached.versions
            return
        }
        versions = StreamVersions(copies: store.appendCache.copiedVersions)
        if let row = try Row.fetchOne(db, sql: "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1") {
            headPosition = row[0]
            headHash = [UInt8](row[1] as Data)
        } else {
            headPosition = 0
            headHash = EventHash.genesis
        }
    }

    /// What this transaction leaves, for the next one of this process (`AppendCache`).
    var snapshot: AppendCache.Snapshot {
        AppendCache.Snapshot(dataVersion: dataVersion, headPosition: headPosition, headHash: headHash, versions: versions)
    }

    public mutating func currentVersion(of stream: String) throws -> Int64 {
        if let v = versions[stream] { return v }
        // Stepped through the C API: one lookup per stream a transaction first appends to (every new session's).
        let statement = try db.cachedStatement(sql: "SELECT MAX(stream_version) FROM events WHERE stream = ?")
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        RawBindings(stmt).bind(1, stream)
        guard sqlite3_step(stmt) == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
        let v = sqlite3_column_type(stmt, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(stmt, 0)
        if let limit = versionLimit, versions.count >= limit { versions.removeAll() }
        versions[stream] = v
        return v
    }

    /// Notes that `stream` has no event in the log, which the caller knows without a lookup (an import's filter of
    /// the streams the log holds): its version is 0 until an event is appended to it.
    public mutating func noteNewStream(_ stream: String) throws {
        #if DEBUG
        // Debug builds (the tests) check the caller against the log.
        if let stored = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(stream_version) FROM events WHERE stream = ?"), arguments: [stream]) {
            throw EditLogError(.corrupt, "stream \(stream) is at version \(stored), not new as the caller said")
        }
        #endif
        if let limit = versionLimit, versions.count >= limit { versions.removeAll() }
        versions[stream] = 0
    }

    /// The last time formatted, reused while the clock reads the same millisecond (most events of a session).
    var lastNow: (ms: Int64, text: String) = (.min, "")

    public mutating func nowString() -> String {
        let ms = clock.now()
        if ms != lastNow.ms { lastNow = (ms, Timestamp.format(milliseconds: ms)) }
        return lastNow.text
    }

    /// Appends a new event of this log. An id that is already stored is a `.conflict` naming the id and
    /// the position that holds it: this log just generated the id, so a collision is a bug or a reused
    /// seeded generator, never something to skip.
    @discardableResult
    public mutating func append(_ e: NewEvent, expected: ExpectedVersion = .any, blob: [UInt8]? = nil) throws -> RecordedEvent {
        switch try insert(e, expected: expected, blob: blob, recordedTime: nil, origin: nil) {
        case .appended(let recorded):
            return recorded
        case .alreadyStored(let position):
            throw EditLogError(.conflict, "event id \(e.id.lowercasedString) is already stored at position \(position); "
                               + "an id generator was reused or seeded twice", at: "stream \(e.stream)")
        }
    }

    /// Appends an event first recorded in another log (a bundle import, a sync pull), keeping its origin.
    /// An event whose id is already stored is not appended again: the outcome says so, for the caller to count.
    /// `canonicalPayload`, when given, must be the event's canonical payload (a bundle's reader has it already).
    /// `streamVersion`, when given, must be the stream's current version (an import tracks the streams it created,
    /// more of them than `versionLimit` keeps): it is not looked up, and it is not remembered either. `guess`, when
    /// given, is the event's hash computed ahead (`ChainGuess`): taken when it was computed for this position, stream
    /// version and previous hash.
    public mutating func appendImported(_ e: NewEvent, expected: ExpectedVersion = .any, blob: [UInt8]? = nil, recordedTime: String?,
                                        origin: EventOrigin, canonicalPayload: [UInt8]? = nil, streamVersion: Int64? = nil,
                                        guess: ChainGuess? = nil) throws -> AppendOutcome {
        try insert(e, expected: expected, blob: blob, recordedTime: recordedTime, origin: origin, canonicalPayload: canonicalPayload, streamVersion: streamVersion,
                   guess: guess)
    }

    mutating func insert(_ e: NewEvent, expected: ExpectedVersion, blob: [UInt8]?, recordedTime: String?, origin: EventOrigin?,
                         canonicalPayload: [UInt8]? = nil, streamVersion known: Int64? = nil, guess: ChainGuess? = nil) throws -> AppendOutcome {
        var a = EventAppend(e, expected: expected)
        a.origin = origin
        a.recordedTime = recordedTime
        return try insert(a, blob: blob, canonicalPayload: canonicalPayload, streamVersion: known, guess: guess)
    }

    /// The one insert every append goes through: version check, chain hash, row, head.
    mutating func insert(_ e: EventAppend, blob: [UInt8]?, canonicalPayload: [UInt8]? = nil, streamVersion known: Int64? = nil,
                         guess: ChainGuess? = nil) throws -> AppendOutcome {
        let version = try version(of: e.stream, known: known)
        try e.expected.check(stream: e.stream, current: version)
        let position = headPosition + 1
        let payload = canonicalPayload ?? e.canonicalPayload
        let recorded = e.recordedTime ?? nowString()
        let values = e.hashValues(position: position, streamVersion: version + 1, payload: payload, recorded: recorded, logId: logId)
        let hash = try hash(of: values, guess: guess, id: e.id)
        guard try Self.insertRow(preparedInsert(), values, hash: hash, db: db, arena: arena) else {
            return .alreadyStored(position: try storedPosition(of: e.id, stream: e.stream, version: version + 1))
        }
        if let blob { try storeBlob(blob) }
        moveHead(to: position, hash: hash, stream: e.stream, version: version + 1, known: known)
        let recordedEvent = e.recorded(position: position, streamVersion: version + 1, recorded: recorded,
                                       origin: e.isOwn(at: position, in: logId) ? EventOrigin(logId: logId, position: position, hash: hash) : e.origin!, hash: hash)
        if keepsAppended { appended.append(recordedEvent) }
        return .appended(recordedEvent)
    }

    /// `EventStoreEngine.append`'s rule for one event: an id already stored is its position, whatever the
    /// expectation (the same batch sent again appends nothing); otherwise the expectation is checked and it is appended.
    public mutating func append(_ e: EventAppend) throws -> AppendOutcome {
        if let stored = try EventReading.position(ofEventId: e.id, db) { return .alreadyStored(position: stored) }
        return try insert(e, blob: nil)
    }

    /// Appends `e`, an event first recorded in another log, in place: it keeps its id, stream, type, payload, actor,
    /// device, session, cause, times and origin, and its position, stream version and hash become this log's. An
    /// import appends a million of them: nothing of the event is copied (the other `appendImported` makes a new event,
    /// a hashed copy and a recorded copy of every text). `canonicalPayload` must be `e.canonicalPayload`;
    /// `streamVersion` and `guess` as for the other. Returns the position of the event already stored under `e`'s id
    /// (then nothing was written and `e` is unchanged), or nil once it is appended.
    public mutating func appendImported(_ e: inout RecordedEvent, canonicalPayload: [UInt8], streamVersion known: Int64? = nil,
                                        guess: ChainGuess? = nil) throws -> Int64? {
        let version = try version(of: e.stream, known: known)
        let position = headPosition + 1
        let hash: [UInt8]
        if let guess, guess.position == position, guess.streamVersion == version + 1, guess.previous == headHash, !Self.checksGuesses {
            hash = guess.hash
        } else {
            hash = try self.hash(of: EventHash.Values(
                position: position, id: e.id, stream: e.stream, streamVersion: version + 1, type: e.type, payload: canonicalPayload, actor: e.actor,
                device: e.device, session: e.session, cause: e.cause, clientTime: e.clientTime, recordedTime: e.recordedTime,
                originLog: e.origin.logId, originPosition: e.origin.position, originHash: e.origin.hash), guess: guess, id: e.id)
        }
        guard try Self.insertRow(preparedInsert(), event: e, position: position, streamVersion: version + 1, payload: canonicalPayload, hash: hash,
                                 db: db, arena: arena) else {
            return try storedPosition(of: e.id, stream: e.stream, version: version + 1)
        }
        moveHead(to: position, hash: hash, stream: e.stream, version: version + 1, known: known)
        e.position = position
        e.streamVersion = version + 1
        e.hash = hash
        if keepsAppended { appended.append(e) }
        return nil
    }

    /// Debug builds (the tests) compute every guessed hash again (`hash(of:guess:id:)` checks it).
    #if DEBUG
    static let checksGuesses = true
    #else
    static let checksGuesses = false
    #endif

    /// The stream's current version: `known` when the caller tracks it (then not remembered), else looked up.
    mutating func version(of stream: String, known: Int64?) throws -> Int64 {
        guard let known else { return try currentVersion(of: stream) }
        #if DEBUG
        // Debug builds (the tests) check a caller's version against the log.
        let stored = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(stream_version) FROM events WHERE stream = ?"), arguments: [stream]) ?? 0
        guard stored == known else { throw EditLogError(.corrupt, "stream \(stream) is at version \(stored), not \(known) as the caller said") }
        #endif
        versions[stream] = nil
        return known
    }

    /// The event's hash after this log's last: `guess`'s when it was computed for this position, stream version and
    /// previous hash (`ChainGuess`: the rest of what the hash covers is the event's own), else computed.
    mutating func hash(of values: EventHash.Values, guess: ChainGuess?, id: UUID) throws -> [UInt8] {
        guard let guess, guess.position == values.position, guess.streamVersion == values.streamVersion, guess.previous == headHash else {
            return EventHash.compute(using: &encoder, previous: headHash, values)
        }
        #if DEBUG
        // Debug builds (the tests) check every guess taken.
        guard EventHash.compute(using: &encoder, previous: headHash, values) == guess.hash else {
            throw EditLogError(.corrupt, "the hash computed ahead for event \(id.lowercasedString) at position \(values.position) is not its hash")
        }
        #endif
        return guess.hash
    }

    mutating func preparedInsert() throws -> Statement {
        if let s = insertStatement { return s }
        let s = try db.cachedStatement(sql: Self.insertSQL)
        insertStatement = s
        return s
    }

    /// After a UNIQUE index fired: the position of the event stored under `id`, or the error of the other index.
    /// Which one fired is answered by looking the id up (never by the message's wording), so the common path pays
    /// for no lookup.
    func storedPosition(of id: UUID, stream: String, version: Int64) throws -> Int64 {
        if let stored = try EventReading.position(ofEventId: id, db) { return stored }
        throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_UNIQUE, message: "UNIQUE constraint failed (stream \(stream), version \(version))",
                            sql: Self.insertSQL)
    }

    /// The head moves to the appended event; the stream's version is remembered unless the caller tracks it.
    mutating func moveHead(to position: Int64, hash: [UInt8], stream: String, version: Int64, known: Int64?) {
        headPosition = position
        headHash = hash
        if known == nil { versions[stream] = version }
    }

    /// Stores attachment bytes under their SHA-256 (content-addressed: the same bytes are stored once).
    /// Returns whether the bytes were new to this log.
    @discardableResult
    public func storeBlob(_ data: [UInt8]) throws -> Bool {
        if BlobStorage.isChunked(size: Int64(data.count)) {
            guard var w = try beginBlob(sha256: EventHash.sha256(data), size: Int64(data.count)) else { return false }
            try w.write(data)
            try w.finish()
            return true
        }
        let sha = Data(EventHash.sha256(data))
        let stmt = try db.cachedStatement(sql: "INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?) ON CONFLICT(sha256) DO NOTHING")
        try stmt.execute(arguments: [sha, data.count, Data(data)])
        return db.changesCount > 0
    }
}
