import EditLogCore
import GRDB
import GRDBSQLite

extension EventStore {
    /// Sets this connection's page cache, in KiB (`EventStore.writerCacheKiB` on a writing connection).
    public func setPageCache(kib: Int) throws(EditLogError) {
        do { try database.writeWithoutTransaction { try Self.setPageCache($0, kib: kib) } } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }

    /// Sets the page cache of the connection `db` belongs to, in KiB, from inside one of its transactions.
    public static func setPageCache(_ db: Database, kib: Int) throws {
        try db.execute(sql: "PRAGMA cache_size = -\(max(0, kib))")
    }

    /// Inside a write transaction: writes the connection's dirty pages to the WAL now (the commit would write them;
    /// they stay part of the transaction), sets its page cache to `kib`, and hands what the cache held beyond that back
    /// to the heap. Before work that allocates beside the cache, such as SQLite's sorter for a `CREATE INDEX`, which
    /// may take as much memory as the cache is allowed.
    public static func shrinkPageCache(_ db: Database, toKiB kib: Int) throws {
        let rc = sqlite3_db_cacheflush(db.sqliteConnection)
        guard rc == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "cannot write the page cache to the WAL") }
        try setPageCache(db, kib: kib)
        try db.execute(sql: "PRAGMA shrink_memory")
    }
}
