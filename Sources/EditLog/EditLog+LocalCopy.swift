import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// Where the writes of a hub node's local copy go (`EditLogHub.HubNode`): each is decided on the local copy caught
/// up to the hub's head and committed there only once the hub holds its events. A server built over a local copy sends
/// its writes through one (`ServerOptions.writer`).
public protocol LogWriter: AnyObject, Sendable {
    func write<T>(_ body: (EditLog) throws -> T) throws -> T
    /// Brings the local copy up to the hub's head now, for a read that must see every write acknowledged before it (a
    /// device's sync starts with one, and may have written through another node a moment ago).
    func refresh() throws
    /// Seconds since the local copy was last known to hold the hub's head (nil: not known).
    var staleness: Double? { get }
}

/// A local copy of a hub's store (not an Esri replica): a log file with its hub's log id holding the hub's events at
/// the hub's positions with the hub's hashes, and projections built from them by the same projector. A serve node's read models, and the local copy
/// the audit commands read a `postgres://` store through.
extension EditLog {
    /// Creates a local copy of log `logId` from its first events (the schema event first). Fails if `path` exists.
    public static func createLocalCopy(at path: String, logId: String, first events: [RecordedEvent], fetchBlob: (String) throws -> [UInt8]?,
                                       clock: any LogClock = SystemClock(), ids: (any IDGenerator)? = nil) throws(EditLogError) -> EditLog {
        guard let schemaEvent = events.first, schemaEvent.position == 1, schemaEvent.type == EventType.schemaDefined.rawValue else {
            throw EditLogError(.corrupt, "a log's first event must be its SchemaDefined event", at: "log \(logId)")
        }
        guard case .schemaDefined(let defined) = try schemaEvent.body else { throw schemaEvent.corrupt("is not a SchemaDefined event") }
        let schema = try defined.definitions.decode()
        let store = try EventStore.create(at: path, logId: logId, clock: clock, ids: ids)
        let log = EditLog(store: store, schema: schema)
        do {
            try log.follow(events, fetchBlob: fetchBlob)
        } catch {
            log.close()
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            throw error
        }
        return log
    }

    /// Appends the hub's next events as they are (`WriteUnit.emitFollowed`) and projects them, in one transaction that
    /// does not pass the commit gate (the hub holds them already). Attachment bytes the local copy lacks come from
    /// `fetchBlob`, in the same transaction.
    public func follow(_ events: [RecordedEvent], fetchBlob: (String) throws -> [UInt8]?) throws(EditLogError) {
        guard !events.isEmpty else { return }
        try store.writeUnit(schema: schema, geocoder: geocoder, gated: false) { unit in
            for e in events {
                for sha in e.blobReferences {
                    guard let digest = Hex.decode(sha), digest.count == 32, try BlobReading.size(unit.db, sha256: digest) == nil else { continue }
                    guard let bytes = try fetchBlob(sha) else {
                        throw EditLogError(.corrupt, "event \(e.id.lowercasedString) references attachment bytes \(sha) its hub does not hold", at: "position \(e.position)")
                    }
                    try unit.storeBlob(bytes)
                }
                try unit.emitFollowed(e)
            }
        }
    }

    /// Sets the gate every write of this handle passes before it commits (`CommitGate`; nil: none).
    public func setCommitGate(_ gate: CommitGate?) { store.setCommitGate(gate) }

    /// The log's head: its last event's position and hash.
    public func head() throws(EditLogError) -> StoreHead { try store.head() }
}
