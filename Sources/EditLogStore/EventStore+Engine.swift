import EditLogCore
import Foundation
import GRDB

/// The SQLite engine of the event store contract: the log file as it is. Its `append` writes events only, like the
/// PostgreSQL engine, and leaves the projection tables behind: on a log with read models every write goes through
/// `WriteUnit` (record, import, serve), and a log appended to here needs `rebuild` before it is read as one.
extension EventStore: EventStoreEngine {
    public var format: Int { Self.formatVersion }

    public func append(_ batch: [EventAppend], after head: Int64?) throws(EditLogError) -> [AppendOutcome] {
        try write { _, appender in
            try StoreHead.check(appender.headPosition, expected: head)
            return try batch.map { e in try appender.append(e) }
        }
    }

    public func events(after position: Int64, limit: Int) throws(EditLogError) -> [RecordedEvent] {
        try read { db in
            var out: [RecordedEvent] = []
            try EventReading.forEach(db, after: position, where: "position <= ?", arguments: [position + Int64(max(0, limit))]) { out.append($0) }
            return out
        }
    }

    public func events(inStream stream: String) throws(EditLogError) -> [RecordedEvent] {
        try read { db in
            var out: [RecordedEvent] = []
            try EventReading.step(db, sql: "SELECT \(EventReading.columns) FROM events WHERE stream = ? ORDER BY stream_version", arguments: [stream]) { row in
                out.append(try EventReading.decode(row))
                return true
            }
            return out
        }
    }

    public func head() throws(EditLogError) -> StoreHead {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1") else {
                return StoreHead(position: 0, hash: EventHash.genesis)
            }
            return StoreHead(position: row[0], hash: [UInt8](row[1] as Data))
        }
    }

    @discardableResult
    public func putBlob(_ bytes: [UInt8]) throws(EditLogError) -> Bool {
        try write { _, appender in try appender.storeBlob(bytes) }
    }

    public func blob(sha256: [UInt8]) throws(EditLogError) -> [UInt8]? {
        try read { db in try BlobReading.whole(db, sha256: sha256) }
    }
}
