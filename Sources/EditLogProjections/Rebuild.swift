import EditLogCore
import EditLogStore
import Foundation
import GRDB

public enum Projections {
    /// Drops every projection table and replays the whole log into fresh ones. With `events`, a second connection
    /// to the same log, the events are read there and the rows written here on another thread (`Projector.writingAside`).
    @discardableResult
    public static func rebuild(_ db: Database, events: Database? = nil, progress: ((Int64, Int64) -> Void)? = nil) throws -> Projector {
        // A log's writing connection has `secure_delete = FAST` (`EventStore.writerSettings`): with the system SQLite's
        // default, this drop wrote every freed page to the WAL as zeros.
        // The change index is rebuilt with them (a log made before it gets one here).
        try ProjectionTables.dropAll(db)
        try ChangeIndex.drop(db)
        return try replay(from: events ?? db, into: db, changeIndex: true, progress: progress)
    }

    /// Replays the events of `source` into the (empty) projection tables of `target`; when they are two
    /// connections, the rows are written on a second thread while the events are read and folded.
    /// `changeIndex`: the target also gets the change index (`ChangeIndex`; the log's own projection).
    public static func replay(from source: Database, into target: Database, changeIndex: Bool = false,
                              progress: ((Int64, Int64) -> Void)? = nil) throws -> Projector {
        let projector = Projector(logId: try EventStore.logId(in: source))
        projector.createsChangeIndex = changeIndex
        projector.defersChangeIndexLookup = true
        let total = try EventReading.count(source)
        // On one connection, a schema change's table reshape cannot drop a table while the events' statement is
        // stepped (SQLite: "database table is locked"): the read stops before it, and goes on after it.
        let shared = source.sqliteConnection == target.sqliteConnection
        try projector.writingAside(to: target, readingFrom: source) {
            var after: Int64 = 0
            while true {
                var held: RecordedEvent?
                try EventReading.forEach(source, after: after, forProjection: true,
                                         until: shared ? { $0.type == EventType.schemaChanged.rawValue } : nil) { e in
                    try projector.apply(e, target)
                    after = e.position
                    if let progress, e.position % 10_000 == 0 { progress(e.position, total) }
                } stopped: { held = $0 }
                guard let held else { break }
                try projector.apply(held, target)
                after = held.position
            }
            try projector.flush(target)
        }
        if changeIndex { try ChangeIndex.createFeatureIndex(target) }
        progress?(total, total)
        return projector
    }

    /// `sqlite_master` definitions of the projection tables and indexes.
    public static func definitions(_ db: Database) throws -> [String: String] {
        try EventStore.definitions(db, .projections)
    }

    /// What a rebuild from scratch gives: the projections replayed from `source`'s events into an in-memory
    /// database, as a digest and definitions. The log is not touched.
    /// `changeIndex`: the rebuilt change index's `ChangeIndex.digest` (nil when `source` has no index to compare).
    public static func rebuiltInMemory(from source: Database) throws -> (digest: String, tables: [String: String], definitions: [String: String],
                                                                        changeIndex: String?) {
        let indexed = try ChangeIndex.exists(source)
        let memory = try DatabaseQueue()
        return try memory.write { target in
            _ = try replay(from: source, into: target, changeIndex: indexed)
            let d = try digest(target)
            return (d.digest, d.tables, try definitions(target), try ChangeIndex.digest(target))
        }
    }

    /// SHA-256 over every projection table's rows in primary-key order, column values typed:
    /// two databases with equal digests hold byte-identical projections.
    public static func digest(_ db: Database) throws -> (digest: String, tables: [String: String]) {
        var all = ContentDigest()
        var perTable: [String: String] = [:]
        for table in try ProjectionTables.all(db) {
            var h = ContentDigest()
            h.update(Array(table.utf8))
            // Every value tagged by its storage class, in the table's column order, rows by their first column.
            try RowBytes.stream(db, sql: "SELECT * FROM \(table) ORDER BY 1") { h.update($0) }
            let d = Hex.encode(h.finalize())
            perTable[table] = d
            all.update(Array("\(table)=\(d);".utf8))
        }
        return (Hex.encode(all.finalize()), perTable)
    }
}
