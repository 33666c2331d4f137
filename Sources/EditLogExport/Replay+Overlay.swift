import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// A replayed state read over a checkpoint where it is, instead of over a copy of it: the checkpoint's file attached
/// read-only (as `base`), and a scratch file holding only the rows the events after it reach (copied from the
/// checkpoint first, then changed by the same `Projector` a replay uses). TEMP views named as the projection tables
/// (TEMP comes first in SQLite's name resolution) show the scratch's row where it has one and the checkpoint's
/// otherwise, so the same `ProjectedState` SQL answers. Its cost follows the events after the checkpoint, not the
/// size of the checkpoint's tables.
extension Replay {
    /// The state after `position` for readers (a historic state): over the nearest checkpoint at or before it when
    /// that one can be read in place (`overlay`), else replayed into `path` as `materialize` does (which checks the
    /// checkpoint byte by byte, so a damaged one that failed the overlay is skipped there), then opened read-only.
    /// The caller closes the queue and removes the file.
    public static func readableState(_ source: Database, through position: Int64, file path: String, checkpoints: CheckpointStore?) throws -> DatabaseQueue {
        try requireEvent(source, at: position)
        if let checkpoints, let c = try checkpoints.list().last(where: { $0.position <= position }),
           let state = try? overlay(source, through: position, checkpoint: c, store: checkpoints, file: path) {
            return state
        }
        let (state, _) = try materialize(source, through: position, file: path, checkpoints: checkpoints, digest: false)
        do {
            try state.close()
            return try openReadOnly(path)
        } catch {
            removeScratch(path)
            throw error
        }
    }

    /// The state after `position` over checkpoint `c` read in place, its scratch at `path`: the connection that
    /// made it, with the checkpoint attached and the views (`showOverlay`). Nil when `c` is not to be read so: written
    /// since its fingerprint, not this log's, or followed by a schema change of this log up to `position` (a change
    /// may reshape tables; the replay from a copy follows it).
    static func overlay(_ source: Database, through position: Int64, checkpoint c: Checkpoint, store: CheckpointStore, file path: String) throws -> DatabaseQueue? {
        guard CheckpointStore.unchangedSinceFingerprint(c.path) else { return nil }
        if let s = try schemaEvent(source, atOrBefore: position), s.position > c.position { return nil }
        removeScratch(path)
        var events: [RecordedEvent] = []
        try forEachEvent(source, after: c.position, through: position) { events.append($0) }
        let touched = try TouchedRows.of(events, after: try event(source, at: c.position), logId: try EventStore.logId(in: source))
        let scratch = try openScratch(path)
        do {
            let usable = try scratch.writeWithoutTransaction { db -> Bool in
                try attach(c.path, db)
                guard try store.check(c, db, log: source, rows: false) == nil else { return false }
                try db.inTransaction {
                    try copy(touched, db)
                    try apply(source, after: c.position, through: position, into: db, events: events)
                    return .commit
                }
                try showOverlay(db)
                return true
            }
            if usable { return scratch }
            try scratch.close()
            removeScratch(path)
            return nil
        } catch {
            try? scratch.close()
            removeScratch(path)
            throw error
        }
    }

    /// Makes the scratch (`main`) and its checkpoint (`base`) read as one state: per projection table, a TEMP view of
    /// the scratch's rows and the checkpoint's others (by rowid: a copied row keeps its rowid). A table whose rowid is
    /// no column of its own shows it as the column `rowid`, so `SELECT rowid …` reads as from the table. The
    /// checkpoint is memory-mapped from here on: a reader's pages of a table come in order (the OS maps a run of
    /// them at the first touch), where the copy's lookups touched pages here and there.
    static func showOverlay(_ db: Database) throws {
        try db.execute(sql: "PRAGMA base.mmap_size = \(1 << 30)")
        for table in try ProjectionTables.all(db) {
            let (columns, rowidColumn) = try layout(db, "main", table)
            let t = ProjectionTables.quoted(table)
            let list = ((rowidColumn ? [] : ["rowid AS rowid"]) + columns.map(ProjectionTables.quoted)).joined(separator: ", ")
            try db.execute(sql: """
                CREATE TEMP VIEW \(t) AS SELECT \(list) FROM main.\(t)
                UNION ALL SELECT \(list) FROM base.\(t) WHERE rowid NOT IN (SELECT rowid FROM main.\(t))
                """)
        }
    }

    /// Copies the checkpoint's (`base`) projection tables into the scratch (`main`): their definitions and indexes,
    /// the rows `touched` names (a table this code does not know: every row), and each table's last row by rowid, so
    /// a row the events insert gets the rowid (the ObjectID) a replay from a copy gives it.
    static func copy(_ touched: TouchedRows, _ db: Database) throws {
        let tables = try ProjectionTables.all(db, in: "base")
        for table in tables {
            guard let sql = try String.fetchOne(db, sql: "SELECT sql FROM base.sqlite_master WHERE type = 'table' AND name = ?", arguments: [table]) else { continue }
            try db.execute(sql: sql)
        }
        for sql in try String.fetchAll(db, sql: "SELECT sql FROM base.sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name LIKE 'p\\_%' ESCAPE '\\' ORDER BY name") {
            try db.execute(sql: sql)
        }
        for table in tables {
            let (columns, rowidColumn) = try layout(db, "base", table)
            let t = ProjectionTables.quoted(table)
            let list = ((rowidColumn ? [] : ["rowid"]) + columns.map(ProjectionTables.quoted)).joined(separator: ", ")
            func rows(_ filter: String, _ arguments: StatementArguments = []) throws {
                try db.execute(sql: "INSERT OR IGNORE INTO main.\(t) (\(list)) SELECT \(list) FROM base.\(t) WHERE \(filter)", arguments: arguments)
            }
            func rows(_ column: String, among keys: Set<String>) throws {
                guard !keys.isEmpty else { return }
                try rows("\(column) IN (SELECT value FROM json_each(?))", [JSONValue.array(keys.map { .string($0) }).serialized()])
            }
            switch table {
            case _ where ProjectionTables.featureLayer(table) != nil:
                try rows("_globalid", among: ProjectionTables.featureLayer(table).flatMap { touched.features[$0] } ?? [])
            case "p_sessions": try rows("id", among: touched.sessions)
            case "p_attachments":
                try rows("parent_global_id", among: touched.parents)
                try rows("global_id", among: touched.attachments)
            case "p_scripts": try rows("sha256", among: touched.scripts)
            default: try rows("1")
            }
            try rows("rowid = (SELECT MAX(rowid) FROM base.\(t))")
        }
    }

    /// A table's columns in order, and whether one of them is its rowid (an INTEGER PRIMARY KEY).
    static func layout(_ db: Database, _ schema: String, _ table: String) throws -> (columns: [String], rowidColumn: Bool) {
        let info = try Row.fetchAll(db, sql: "SELECT name, type, pk FROM pragma_table_info(?, ?) ORDER BY cid", arguments: [table, schema])
        let keys = info.filter { ($0["pk"] as Int64) > 0 }
        return (info.map { $0["name"] }, keys.count == 1 && (keys[0]["type"] as String).uppercased() == "INTEGER")
    }

    /// Attaches a checkpoint's file read-only as `base` (an SQLite URI with `mode=ro`: nothing can write to it).
    static func attach(_ path: String, _ db: Database) throws {
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
        try db.execute(sql: "ATTACH DATABASE ? AS base", arguments: ["file:" + encoded + "?mode=ro"])
    }
}
