import Foundation
import GRDBSQLite

/// The fair floors ("Performance 2"): the raw C-API cost of the physical work an operation cannot avoid,
/// measured in the same run. After the timed operation, the rows it left in the log (read back from the
/// measured file) are replayed as raw `INSERT`s into a fresh file whose tables and indexes are created
/// from the measured log's own DDL (`sqlite_master`), with the log's settings (WAL, synchronous=NORMAL)
/// and the log's transaction grouping. Only the inserts and their BEGIN/COMMIT are timed: rows are read
/// from the measured log in chunks into memory, and the time spent reading them is subtracted.

/// One table's rows to replay: `select` returns, first, the position that places a row in a transaction
/// (the event position, a projection row's `_position`/`position`), then every column of `table` in order.
struct FloorTable {
    var table: String
    var columns: [String]
    var select: String
}

/// How the replayed rows are grouped into transactions.
enum FloorGrouping {
    /// Everything in one transaction.
    case oneTransaction
    /// The log's own boundaries: a transaction ends at each of these positions (sorted; the position of the
    /// `ScriptRecorded` event that closes every `record` call). A row belongs to the first transaction whose
    /// end is ≥ its position.
    case endingAt([Int64])
    /// Every row in its own transaction (a reference line).
    case eachRow
}

struct FloorRun {
    var watch: Stopwatch
    /// Rows inserted per table.
    var rows: [(table: String, count: Int)]
    var transactions: Int
    var total: Int { rows.reduce(0) { $0 + $1.count } }

    /// "events 1,234 + p_sessions 200 + …", the rows a floor inserted.
    var summary: String {
        rows.filter { $0.count > 0 }.map { "\($0.table) \($0.count)" }.joined(separator: ", ")
    }
    var featureRows: Int { rows.filter { $0.table.hasPrefix("p_layer_") }.reduce(0) { $0 + $1.count } }
}

enum Floors {
    /// Rows that an operation appended or updated after position `after`: the event rows, the projection
    /// rows they produced (`p_sessions` by `coalesce(ended_position, started_position)`, `p_layer_<id>` by
    /// `_position` — an updated feature row counts once —, `p_attachments` and `p_scripts` by `position`),
    /// and the `blobs` rows staged attachments added (blobs not already in the base log, placed at their
    /// first `AttachmentStaged` event).
    static func addedRows(in src: RawDB, after: Int64, baseLog: String?) throws -> [FloorTable] {
        var out: [FloorTable] = []
        func table(_ t: String, key: String) throws {
            let cols = try src.columns(of: t)
            let list = cols.map(Raw.quote).joined(separator: ", ")
            out.append(FloorTable(table: t, columns: cols,
                                  select: "SELECT \(key) AS k, \(list) FROM \(Raw.quote(t)) WHERE \(key) > \(after) ORDER BY \(key)"))
        }
        try table("events", key: "position")
        try table("p_sessions", key: "coalesce(ended_position, started_position)")
        for t in try layerTables(src) { try table(t, key: "_position") }
        try table("p_attachments", key: "position")
        try table("p_scripts", key: "position")
        // Blobs have no position: find the staged event that brought each.
        try src.registerUnhex()
        var notInBase = ""
        if let baseLog {
            let s = try src.prepare("ATTACH DATABASE ? AS base")
            s.bind(1, baseLog)
            try s.run()
            notInBase = "AND NOT EXISTS (SELECT 1 FROM base.blobs o WHERE o.sha256 = b.sha256)"
        }
        let cols = try src.columns(of: "blobs")
        out.append(FloorTable(table: "blobs", columns: cols, select: """
            SELECT min(e.position) AS k, \(cols.map { "b." + Raw.quote($0) }.joined(separator: ", "))
            FROM events e JOIN blobs b ON b.sha256 = bench_unhex(json_extract(e.payload, '$.sha256'))
            WHERE e.position > \(after) AND e.type = 'AttachmentStaged' \(notInBase)
            GROUP BY b.sha256 ORDER BY k
            """))
        return out
    }

    /// Every row of every projection table (what a rebuild produces), in table order.
    static func projectionRows(in src: RawDB) throws -> [FloorTable] {
        try src.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'p\\_%' ESCAPE '\\' ORDER BY name").map { t in
            let cols = try src.columns(of: t)
            return FloorTable(table: t, columns: cols, select: "SELECT 0 AS k, \(cols.map(Raw.quote).joined(separator: ", ")) FROM \(Raw.quote(t))")
        }
    }

    static func layerTables(_ src: RawDB) throws -> [String] {
        try src.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'p\\_layer\\_%' ESCAPE '\\' ORDER BY name")
    }

    /// Positions of the events that close the log's transactions after `after` (one `ScriptRecorded` per `record` call).
    static func transactionEnds(in src: RawDB, after: Int64) throws -> [Int64] {
        let s = try src.prepare("SELECT position FROM events WHERE position > \(after) AND type = 'ScriptRecorded' ORDER BY position")
        var out: [Int64] = []
        while s.step() == SQLITE_ROW { out.append(sqlite3_column_int64(s.handle, 0)) }
        return out
    }

    /// Replays `tables` (read from `src`) as raw inserts into a fresh file at `path` made with the same DDL.
    /// With `scanEvents`, a raw `SELECT * FROM events` of `src` stepping every column is timed first.
    static func replay(_ tables: [FloorTable], from src: RawDB, into path: String, grouping: FloorGrouping,
                       scanEvents: Bool = false, cacheKiB: Int? = nil, remove: (String) -> Void) throws -> FloorRun {
        remove(path)
        defer { remove(path) }
        let dst = try RawDB(path)
        try dst.useLogSettings()
        if let cacheKiB { try dst.exec("PRAGMA cache_size = -\(cacheKiB)") }
        for t in tables { try RawCopy.cloneSchema(of: t.table, from: src, into: dst) }
        try dst.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        let cursors = try tables.map { try FloorCursor($0, from: src, into: dst) }
        let begin = try dst.prepare("BEGIN IMMEDIATE"), commit = try dst.prepare("COMMIT")
        var total = Stopwatch(), excluded = Stopwatch()
        var transactions = 0
        try total.time {
            if scanEvents {
                _ = try RawCopy.scan(src, sql: "SELECT * FROM events")
            }
            switch grouping {
            case .oneTransaction:
                try begin.run()
                for c in cursors {
                    while try c.nextKey(&excluded) != nil { try c.insertNext() }
                }
                try commit.run()
                transactions = 1
            case .endingAt(let ends):
                for end in ends + [Int64.max] {
                    var opened = false
                    for c in cursors {
                        while let k = try c.nextKey(&excluded), k <= end {
                            if !opened { try begin.run(); opened = true }
                            try c.insertNext()
                        }
                    }
                    if opened { try commit.run(); transactions += 1 }
                }
            case .eachRow:
                for c in cursors {
                    while try c.nextKey(&excluded) != nil {
                        try begin.run()
                        try c.insertNext()
                        try commit.run()
                        transactions += 1
                    }
                }
            }
        }
        var w = Stopwatch()
        w.wallNs = total.wallNs - min(total.wallNs, excluded.wallNs)
        w.cpuNs = total.cpuNs - min(total.cpuNs, excluded.cpuNs)
        return FloorRun(watch: w, rows: cursors.map { ($0.table, $0.inserted) }, transactions: transactions)
    }
}

extension Floors {
    /// The events-only reference floor: copies the log's events after position `after` into a fresh file with the same `events` table
    /// (earlier rows copied first, untimed), timing only the inserts and their transactions.
    static func insertEvents(_ ctx: BenchContext, from logPath: String, after: Int64, transactions: FloorTransactions, name: String) throws -> Stopwatch {
        let floorPath = ctx.path("\(name).sqlite")
        ctx.remove(floorPath)
        defer { ctx.remove(floorPath) }
        let src = try RawDB(logPath, readonly: true)
        let dst = try RawDB(floorPath)
        try dst.useLogSettings()
        try RawCopy.cloneSchema(of: "events", from: src, into: dst)
        let cols = try src.columns(of: "events")
        let select = "SELECT \(cols.map(Raw.quote).joined(separator: ", ")) FROM events WHERE position <= \(after) ORDER BY position"
        var untimed: Stopwatch? = nil
        try dst.exec("BEGIN")
        try RawCopy.copy(select: select, from: src, into: dst, table: "events", columns: cols, transactions: .callerManaged, watch: &untimed)
        try dst.exec("COMMIT")
        try dst.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        var watch: Stopwatch? = Stopwatch()
        let timedSelect = "SELECT \(cols.map(Raw.quote).joined(separator: ", ")) FROM events WHERE position > \(after) ORDER BY position"
        let begin = try dst.prepare("BEGIN IMMEDIATE"), commit = try dst.prepare("COMMIT")
        if case .callerManaged = transactions { try watch!.time { try begin.run() } }
        try RawCopy.copy(select: timedSelect, from: src, into: dst, table: "events", columns: cols, transactions: transactions, watch: &watch)
        if case .callerManaged = transactions { try watch!.time { try commit.run() } }
        return watch!
    }
}

/// Streams one table's rows out of the measured log in chunks and inserts them one by one.
final class FloorCursor {
    let table: String
    private let select: RawStmt
    private let insert: RawStmt
    private var buf: RowBuffer
    private var keys: [Int64] = []
    private var next = 0
    private var exhausted = false
    private let chunkRows: Int
    private(set) var inserted = 0

    init(_ t: FloorTable, from src: RawDB, into dst: RawDB, chunkRows: Int = 20_000) throws {
        table = t.table
        select = try src.prepare(t.select)
        guard Int(sqlite3_column_count(select.handle)) == t.columns.count + 1 else {
            throw RawError(description: "the floor's select for \(t.table) returns \(sqlite3_column_count(select.handle)) columns, expected \(t.columns.count + 1)")
        }
        insert = try dst.prepare("INSERT INTO \(Raw.quote(t.table)) (\(t.columns.map(Raw.quote).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: t.columns.count).joined(separator: ", ")))")
        buf = RowBuffer(columns: t.columns.count)
        self.chunkRows = chunkRows
    }

    /// The transaction key of the next row, or nil at the end; reading a new chunk is timed into `excluded`.
    @inline(__always)
    func nextKey(_ excluded: inout Stopwatch) throws -> Int64? {
        if next < keys.count { return keys[next] }
        if exhausted { return nil }
        try excluded.time { try refill() }
        return next < keys.count ? keys[next] : nil
    }

    private func refill() throws {
        buf.removeAll()
        keys.removeAll(keepingCapacity: true)
        next = 0
        while keys.count < chunkRows {
            let rc = select.step()
            if rc == SQLITE_ROW {
                keys.append(sqlite3_column_int64(select.handle, 0))
                buf.append(from: select.handle, firstColumn: 1)
            } else if rc == SQLITE_DONE {
                exhausted = true
                break
            } else {
                throw RawError(description: "reading \(table): \(select.db.errmsg)")
            }
        }
    }

    /// Inserts the row `nextKey` returned.
    @inline(__always)
    func insertNext() throws {
        let r = next
        let rc: Int32 = buf.arena.withUnsafeBufferPointer { arena in
            buf.bind(row: r, to: insert.handle, base: arena.baseAddress)
            let rc = sqlite3_step(insert.handle)
            sqlite3_reset(insert.handle)
            return rc
        }
        guard rc == SQLITE_DONE else { throw RawError(description: "insert into \(table): \(insert.db.errmsg)") }
        next += 1
        inserted += 1
    }
}

extension RawDB {
    /// `bench_unhex(text)`: hex text to a blob (the system SQLite 3.40 predates `unhex`).
    func registerUnhex() throws {
        let fn: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { ctx, argc, argv in
            guard argc == 1, let argv, let v = argv[0], let p = sqlite3_value_text(v) else { sqlite3_result_null(ctx); return }
            let n = Int(sqlite3_value_bytes(v))
            guard n % 2 == 0, n > 0 else { sqlite3_result_null(ctx); return }
            var out = [UInt8](repeating: 0, count: n / 2)
            for i in 0..<(n / 2) {
                guard let h = Hexdigit.value(p[2 * i]), let l = Hexdigit.value(p[2 * i + 1]) else { sqlite3_result_null(ctx); return }
                out[i] = h << 4 | l
            }
            out.withUnsafeBytes { sqlite3_result_blob(ctx, $0.baseAddress, Int32(n / 2), Raw.transient) }
        }
        guard sqlite3_create_function_v2(handle, "bench_unhex", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, fn, nil, nil, nil) == SQLITE_OK else {
            throw RawError(description: "registering bench_unhex: \(errmsg)")
        }
    }
}

enum Hexdigit {
    @inline(__always)
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
