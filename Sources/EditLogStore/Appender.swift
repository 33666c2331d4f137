import EditLogCore
import Foundation
import GRDB

/// Appends events inside one write transaction: gap-free positions, per-stream versions with
/// optimistic concurrency, idempotency by event id, and the hash chain.
public struct Appender {
    let db: Database
    let logId: String
    let clock: any LogClock
    public let ids: any IDGenerator
    public private(set) var headPosition: Int64
    public private(set) var headHash: [UInt8]
    var versions: [String: Int64] = [:]
    var encoder = EventHash.Encoder()
    /// Events appended by this transaction, in order.
    public private(set) var appended: [RecordedEvent] = []

    init(db: Database, store: EventStore) throws {
        self.db = db
        self.logId = store.logId
        self.clock = store.clock
        self.ids = store.ids
        if let row = try Row.fetchOne(db, sql: "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1") {
            headPosition = row[0]
            headHash = [UInt8](row[1] as Data)
        } else {
            headPosition = 0
            headHash = EventHash.genesis
        }
    }

    public func currentVersion(of stream: String) throws -> Int64 {
        if let v = versions[stream] { return v }
        return try Int64.fetchOne(db, sql: "SELECT MAX(stream_version) FROM events WHERE stream = ?", arguments: [stream]) ?? 0
    }

    public func nowString() -> String { Timestamp.format(milliseconds: clock.now()) }

    /// Appends a new event of this log. Returns nil when an event with the same id is already stored (a no-op).
    @discardableResult
    public mutating func append(_ e: NewEvent, expected: ExpectedVersion = .any, blob: [UInt8]? = nil, recordedTime: String? = nil) throws -> RecordedEvent? {
        try append(e, expected: expected, blob: blob, recordedTime: recordedTime, origin: nil)
    }

    /// Appends an event, keeping a foreign origin when it was first recorded elsewhere.
    @discardableResult
    public mutating func append(_ e: NewEvent, expected: ExpectedVersion, blob: [UInt8]?, recordedTime: String?, origin: EventOrigin?) throws -> RecordedEvent? {
        let idBytes = withUnsafeBytes(of: e.id.uuid) { Data($0) }
        let version = try currentVersion(of: e.stream)
        switch expected {
        case .any: break
        case .noStream where version != 0:
            throw EditLogError(.conflict, "stream \(e.stream) already exists at version \(version); expected no stream")
        case .exact(let v) where v != version:
            throw EditLogError(.conflict, "stream \(e.stream) is at version \(version); expected \(v) (someone else wrote to it first: reload and retry)")
        default: break
        }
        if let blob { try storeBlob(blob) }
        let position = headPosition + 1
        let payload = e.payload.serializedBytes()
        let recorded = recordedTime ?? nowString()
        let originLog = origin?.logId ?? logId
        let originPosition = origin?.position ?? position
        let hash = EventHash.compute(
            using: &encoder, previous: headHash, position: position, id: e.id, stream: e.stream, streamVersion: version + 1,
            type: e.type.rawValue, payload: payload, actor: e.context.actor, device: e.context.device, session: e.session,
            cause: e.cause, clientTime: e.context.clientTime, recordedTime: recorded,
            originLog: originLog, originPosition: originPosition, originHash: origin?.hash)
        let insert = try db.cachedStatement(sql: """
            INSERT INTO events (position, id, stream, stream_version, type, payload, actor, device, session, cause,
                                client_time, recorded_time, origin_log, origin_position, origin_hash, hash)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let payloadString = String(decoding: payload, as: UTF8.self)
        do {
            try insert.execute(arguments: [
                position, idBytes, e.stream, version + 1, e.type.rawValue, payloadString, e.context.actor, e.context.device,
                e.session, e.cause, e.context.clientTime, recorded, originLog, originPosition, origin.map { Data($0.hash) }, Data(hash),
            ])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE && (error.message ?? "").contains("events.id") {
            // The id is already stored: appending it again is a no-op (idempotent import). The unique
            // index answers this, so the common path pays no extra lookup.
            return nil
        }
        headPosition = position
        headHash = hash
        versions[e.stream] = version + 1
        let recordedEvent = RecordedEvent(
            position: position, id: e.id, stream: e.stream, streamVersion: version + 1, type: e.type.rawValue, payload: e.payload,
            actor: e.context.actor, device: e.context.device, session: e.session, cause: e.cause,
            clientTime: e.context.clientTime, recordedTime: recorded,
            origin: origin ?? EventOrigin(logId: logId, position: position, hash: hash), hash: hash)
        appended.append(recordedEvent)
        return recordedEvent
    }

    /// Stores attachment bytes under their SHA-256 (content-addressed: the same bytes are stored once).
    public func storeBlob(_ data: [UInt8]) throws {
        let sha = Data(EventHash.sha256(data))
        let stmt = try db.cachedStatement(sql: "INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?) ON CONFLICT(sha256) DO NOTHING")
        try stmt.execute(arguments: [sha, data.count, Data(data)])
    }
}
