import EditLogCore
import Foundation

/// The event store as a contract that more than one engine keeps: this SQLite store (`EventStore`) and the hub's
/// PostgreSQL store (`EditLogHub.PostgresEventStore`). One conformance suite (`EventStoreConformanceTests`) runs
/// against each. Every engine stores the same columns and computes the same chain (`EventHash`), so an event
/// keeps its bytes and its hash whichever engine holds it, and `verify` compares across engines.
public protocol EventStoreEngine: Sendable {
    /// The log's id: the origin of every event this log records first.
    var logId: String { get }
    /// The store's format (`EventStore.formatVersion`).
    var format: Int { get }

    /// Appends a batch in one transaction, all or nothing. An event whose id is already stored is not appended again
    /// (its outcome gives the position that holds it), so a batch sent twice appends nothing the second time. For each
    /// other event its expected version is checked against its stream as the batch has left it, and a mismatch is a
    /// `.conflict` naming the stream, with nothing appended.
    ///
    /// `after`, when given, is the head position the batch was decided on: if the log has moved past it, the append is a
    /// `.conflict` and appends nothing (a hub node's write, decided on its local copy: a state that must still be the head's).
    func append(_ batch: [EventAppend], after head: Int64?) async throws(EditLogError) -> [AppendOutcome]
    /// At most `limit` events after `position`, in position order.
    func events(after position: Int64, limit: Int) async throws(EditLogError) -> [RecordedEvent]
    /// Every event of one stream, in stream-version order.
    func events(inStream stream: String) async throws(EditLogError) -> [RecordedEvent]
    /// The last event's position and hash (0 and `EventHash.genesis` for an empty log).
    func head() async throws(EditLogError) -> StoreHead
    /// Stores bytes under their SHA-256 (chunked past `BlobStorage.inlineLimit`); false when they were stored already.
    @discardableResult
    func putBlob(_ bytes: [UInt8]) async throws(EditLogError) -> Bool
    /// The bytes stored under a SHA-256, or nil.
    func blob(sha256: [UInt8]) async throws(EditLogError) -> [UInt8]?
}

extension EventStoreEngine {
    /// `append(_:after:)` whatever the head.
    public func append(_ batch: [EventAppend]) async throws(EditLogError) -> [AppendOutcome] { try await append(batch, after: nil) }
}

extension StoreHead {
    /// Checks the head an append was decided on (`EventStoreEngine.append(_:after:)`): the one rule both engines apply.
    public static func check(_ current: Int64, expected: Int64?) throws(EditLogError) {
        guard let expected, expected != current else { return }
        throw EditLogError(.conflict, "the log's head is at position \(current); the batch was decided at \(expected) (another writer appended first: catch up and retry)")
    }
}

/// One event for `EventStoreEngine.append`: a new event of this log (no `origin`: the store gives it its recording
/// time), or one first recorded in another log or by another engine, which keeps its origin and recording time.
public struct EventAppend: Sendable {
    public var id: UUID
    public var stream: String
    public var type: String
    /// What it says: a writer's body (no JSON in between), or the payload of an event recorded elsewhere, as read.
    public var body: EventBody?
    public var payload: JSONValue?
    public var actor: String
    public var device: String
    public var session: String?
    public var cause: String
    public var clientTime: String?
    public var expected: ExpectedVersion
    public var origin: EventOrigin?
    public var recordedTime: String?

    public init(_ e: NewEvent, expected: ExpectedVersion = .any) {
        id = e.id; stream = e.stream; type = e.typeName; body = e.body; actor = e.context.actor; device = e.context.device
        session = e.session; cause = e.cause; clientTime = e.context.clientTime; self.expected = expected
    }

    /// The event as it was recorded: it keeps its id, payload, times and origin, so it hashes the same wherever its
    /// position and stream version are the same.
    public init(recorded e: RecordedEvent, expected: ExpectedVersion = .any) {
        id = e.id; stream = e.stream; type = e.type; actor = e.actor; device = e.device
        // A writer's body stays a body (its bytes are written from it); an event read keeps its payload as read.
        body = e.writtenBody
        if body == nil { payload = e.payload }
        session = e.session; cause = e.cause; clientTime = e.clientTime; self.expected = expected
        origin = e.origin; recordedTime = e.recordedTime
    }

    /// The canonical payload bytes (the chain hashes them; the row stores them).
    public var canonicalPayload: [UInt8] { body?.canonicalBytes ?? payload!.serializedBytes() }

    /// The event as appended at `position` with `streamVersion`, `recorded` and `hash`, `origin` its origin.
    public func recorded(position: Int64, streamVersion: Int64, recorded: String, origin: EventOrigin, hash: [UInt8]) -> RecordedEvent {
        if let body {
            return RecordedEvent(position: position, id: id, stream: stream, streamVersion: streamVersion, body: body, actor: actor, device: device,
                                 session: session, cause: cause, clientTime: clientTime, recordedTime: recorded, origin: origin, hash: hash)
        }
        return RecordedEvent(position: position, id: id, stream: stream, streamVersion: streamVersion, type: type, payload: payload!, actor: actor,
                             device: device, session: session, cause: cause, clientTime: clientTime, recordedTime: recorded, origin: origin, hash: hash)
    }

    /// Whether, appended at `position` to log `logId`, the event is that log's own: it has no origin, or its origin is
    /// this very place (a log's own event copied to another engine of the same log). An own event's origin hash is its hash.
    public func isOwn(at position: Int64, in logId: String) -> Bool {
        guard let origin else { return true }
        return origin.logId == logId && origin.position == position
    }

    /// What the chain hashes for this event at `position` after a stream at `version`, recorded at `recorded`.
    public func hashValues(position: Int64, streamVersion: Int64, payload bytes: [UInt8], recorded: String, logId: String) -> EventHash.Values {
        let own = isOwn(at: position, in: logId)
        return EventHash.Values(position: position, id: id, stream: stream, streamVersion: streamVersion, type: type, payload: bytes, actor: actor,
                                device: device, session: session, cause: cause, clientTime: clientTime, recordedTime: recorded,
                                originLog: own ? logId : origin!.logId, originPosition: own ? position : origin!.position, originHash: own ? nil : origin!.hash)
    }
}

/// Where a log ends.
public struct StoreHead: Sendable, Hashable {
    public var position: Int64
    public var hash: [UInt8]
    public init(position: Int64, hash: [UInt8]) { self.position = position; self.hash = hash }
}

extension ExpectedVersion {
    /// Checks a stream's current version against this expectation: the one rule both engines apply.
    public func check(stream: String, current version: Int64) throws(EditLogError) {
        switch self {
        case .any: return
        case .noStream where version != 0:
            throw EditLogError(.conflict, "stream \(stream) already exists at version \(version); expected no stream")
        case .exact(let v) where v != version:
            throw EditLogError(.conflict, "stream \(stream) is at version \(version); expected \(v) (someone else wrote to it first: reload and retry)")
        default: return
        }
    }
}
