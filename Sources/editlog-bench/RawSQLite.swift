import EditLog
import Foundation
import GRDBSQLite

/// The floor: SQLite's C API with nothing in between (the same system library GRDB links).
struct RawError: Error, CustomStringConvertible {
    var description: String
}

final class RawDB {
    let handle: OpaquePointer
    let path: String

    init(_ path: String, readonly: Bool = false) throws {
        var p: OpaquePointer?
        let flags = (readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &p, flags, nil)
        guard rc == SQLITE_OK, let p else {
            let msg = p.map { String(cString: sqlite3_errmsg($0)) } ?? "code \(rc)"
            if let p { sqlite3_close_v2(p) }
            throw RawError(description: "sqlite3_open_v2 \(path): \(msg)")
        }
        handle = p
        self.path = path
    }

    deinit { sqlite3_close_v2(handle) }

    var errmsg: String { String(cString: sqlite3_errmsg(handle)) }

    func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(handle, sql, nil, nil, &err) != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? errmsg
            sqlite3_free(err)
            throw RawError(description: "\(msg) in: \(sql.prefix(200))")
        }
    }

    func prepare(_ sql: String) throws -> RawStmt {
        var s: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &s, nil) == SQLITE_OK, let s else {
            throw RawError(description: "prepare: \(errmsg) in: \(sql.prefix(200))")
        }
        return RawStmt(s, db: self)
    }

    /// WAL, synchronous=NORMAL and a writer's page cache and checkpoint interval: the settings of an EditLog log.
    func useLogSettings() throws {
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = NORMAL")
        for pragma in EditLog.writerSettings { try exec(pragma) }
    }

    /// Column names of a table, in declaration order.
    func columns(of table: String) throws -> [String] {
        let s = try prepare("PRAGMA table_info(\(Raw.quote(table)))")
        var out: [String] = []
        while s.step() == SQLITE_ROW { out.append(s.text(1)) }
        return out
    }

    /// The DDL of a table and of its explicit indexes and triggers, table first.
    func ddl(of table: String) throws -> [String] {
        let s = try prepare("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'table' DESC, type, name")
        s.bind(1, table)
        var out: [String] = []
        while s.step() == SQLITE_ROW { out.append(s.text(0)) }
        return out
    }

    /// The first column of every row, as text.
    func strings(_ sql: String) throws -> [String] {
        let s = try prepare(sql)
        var out: [String] = []
        while s.step() == SQLITE_ROW { out.append(s.text(0)) }
        return out
    }

    func scalarInt(_ sql: String) throws -> Int64 {
        let s = try prepare(sql)
        guard s.step() == SQLITE_ROW else { throw RawError(description: "no row: \(sql)") }
        return sqlite3_column_int64(s.handle, 0)
    }
}

final class RawStmt {
    let handle: OpaquePointer
    let db: RawDB
    init(_ h: OpaquePointer, db: RawDB) { handle = h; self.db = db }
    deinit { sqlite3_finalize(handle) }

    @discardableResult func step() -> Int32 { sqlite3_step(handle) }
    func reset() { sqlite3_reset(handle) }
    func bind(_ i: Int32, _ s: String) { sqlite3_bind_text(handle, i, s, -1, Raw.transient) }
    func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(handle, i, v) }
    func text(_ i: Int32) -> String { sqlite3_column_text(handle, i).map { String(cString: $0) } ?? "" }

    /// Steps a statement that returns no rows (INSERT, BEGIN, COMMIT), then resets it.
    func run() throws {
        let rc = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard rc == SQLITE_DONE else { throw RawError(description: "step: \(db.errmsg) (rc \(rc))") }
    }
}

enum Raw {
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

/// Rows copied out of SQLite into one byte arena, so binding them back costs nothing but the bind
/// (SQLITE_STATIC pointers into the arena).
struct RowBuffer {
    enum Cell {
        case null
        case int(Int64)
        case double(Double)
        case text(offset: Int, count: Int)
        case blob(offset: Int, count: Int)
    }

    let columns: Int
    var arena: [UInt8] = []
    var cells: [Cell] = []

    init(columns: Int) { self.columns = columns }

    var rowCount: Int { cells.count / columns }

    mutating func removeAll() {
        arena.removeAll(keepingCapacity: true)
        cells.removeAll(keepingCapacity: true)
    }

    /// Appends the current row of `stmt` (its columns from `firstColumn` on).
    mutating func append(from stmt: OpaquePointer, firstColumn: Int32 = 0) {
        for i in firstColumn..<(firstColumn + Int32(columns)) {
            switch sqlite3_column_type(stmt, i) {
            case SQLITE_INTEGER: cells.append(.int(sqlite3_column_int64(stmt, i)))
            case SQLITE_FLOAT: cells.append(.double(sqlite3_column_double(stmt, i)))
            case SQLITE_TEXT:
                let p = sqlite3_column_text(stmt, i)
                let n = Int(sqlite3_column_bytes(stmt, i))
                let off = arena.count
                if let p, n > 0 { arena.append(contentsOf: UnsafeBufferPointer(start: p, count: n)) }
                cells.append(.text(offset: off, count: n))
            case SQLITE_BLOB:
                let p = sqlite3_column_blob(stmt, i)
                let n = Int(sqlite3_column_bytes(stmt, i))
                let off = arena.count
                if let p, n > 0 { arena.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
                cells.append(.blob(offset: off, count: n))
            default: cells.append(.null)
            }
        }
    }

    /// Binds row `r` to `stmt`; `base` is the arena's base address and must outlive the step.
    @inline(__always)
    func bind(row r: Int, to stmt: OpaquePointer, base: UnsafePointer<UInt8>?) {
        let start = r * columns
        for c in 0..<columns {
            let i = Int32(c + 1)
            switch cells[start + c] {
            case .null: sqlite3_bind_null(stmt, i)
            case .int(let v): sqlite3_bind_int64(stmt, i, v)
            case .double(let v): sqlite3_bind_double(stmt, i, v)
            case .text(let off, let n):
                if n == 0 { sqlite3_bind_text(stmt, i, "", 0, nil) } else {
                    _ = base!.advanced(by: off).withMemoryRebound(to: CChar.self, capacity: n) { sqlite3_bind_text(stmt, i, $0, Int32(n), nil) }
                }
            case .blob(let off, let n):
                if n == 0 { sqlite3_bind_zeroblob(stmt, i, 0) } else { sqlite3_bind_blob(stmt, i, base!.advanced(by: off), Int32(n), nil) }
            }
        }
    }

    func isText(row r: Int, column c: Int, equalTo s: [UInt8]) -> Bool {
        guard case .text(let off, let n) = cells[r * columns + c], n == s.count else { return false }
        return arena[off..<off + n].elementsEqual(s)
    }
}

/// How the floor groups inserted rows into transactions.
enum FloorTransactions {
    /// The caller opens and commits one transaction around everything.
    case callerManaged
    /// BEGIN IMMEDIATE / COMMIT around every row.
    case eachRow
    /// A transaction ends after each row whose `column` holds the text `value` (e.g. the `ScriptRecorded`
    /// event that closes every `record` call): the log's own transaction boundaries.
    case endAfter(column: Int, value: String)
}

/// Accumulated wall and CPU time of the timed parts of a run.
struct Stopwatch {
    var wallNs: UInt64 = 0
    var cpuNs: UInt64 = 0

    static func cpuNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func wallNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    mutating func time<T>(_ body: () throws -> T) rethrows -> T {
        let w0 = Stopwatch.wallNow(), c0 = Stopwatch.cpuNow()
        defer {
            wallNs += Stopwatch.wallNow() - w0
            cpuNs += Stopwatch.cpuNow() - c0
        }
        return try body()
    }

    var seconds: Double { Double(wallNs) / 1e9 }
    var cpuSeconds: Double { Double(cpuNs) / 1e9 }
}

enum RawCopy {
    /// Creates `table` in `dest` exactly as it is in `source` (table, indexes, triggers).
    static func cloneSchema(of table: String, from source: RawDB, into dest: RawDB) throws {
        for sql in try source.ddl(of: table) { try dest.exec(sql) }
    }

    /// Streams `select` from `source` and inserts each row into `table` of `dest` with one prepared
    /// statement. Only the inserts (and their BEGIN/COMMIT) are timed: rows are read in chunks into
    /// memory first, untimed. Returns the number of rows inserted.
    @discardableResult
    static func copy(select: String, from source: RawDB, into dest: RawDB, table: String, columns: [String],
                     transactions: FloorTransactions, watch: inout Stopwatch?, chunkRows: Int = 20_000) throws -> Int {
        let sel = try source.prepare(select)
        guard Int(sqlite3_column_count(sel.handle)) == columns.count else {
            throw RawError(description: "select returns \(sqlite3_column_count(sel.handle)) columns, table \(table) has \(columns.count)")
        }
        let insert = try dest.prepare("INSERT INTO \(Raw.quote(table)) (\(columns.map(Raw.quote).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
        let begin = try dest.prepare("BEGIN IMMEDIATE")
        let commit = try dest.prepare("COMMIT")
        var buf = RowBuffer(columns: columns.count)
        var total = 0
        var inTxn = false
        var endColumn = -1
        var endValue: [UInt8] = []
        if case .endAfter(let c, let v) = transactions { endColumn = c; endValue = Array(v.utf8) }
        var done = false
        while !done {
            buf.removeAll()
            while buf.rowCount < chunkRows {
                let rc = sel.step()
                if rc == SQLITE_ROW { buf.append(from: sel.handle) } else if rc == SQLITE_DONE { done = true; break } else {
                    throw RawError(description: "reading \(table): \(source.errmsg)")
                }
            }
            let rows = buf.rowCount
            if rows == 0 { break }
            func insertChunk() throws {
                try buf.arena.withUnsafeBufferPointer { arena in
                    let base = arena.baseAddress
                    for r in 0..<rows {
                        switch transactions {
                        case .callerManaged: break
                        case .eachRow: try begin.run()
                        case .endAfter: if !inTxn { try begin.run(); inTxn = true }
                        }
                        buf.bind(row: r, to: insert.handle, base: base)
                        let rc = sqlite3_step(insert.handle)
                        sqlite3_reset(insert.handle)
                        guard rc == SQLITE_DONE else { throw RawError(description: "insert into \(table): \(dest.errmsg)") }
                        switch transactions {
                        case .callerManaged: break
                        case .eachRow: try commit.run()
                        case .endAfter: if buf.isText(row: r, column: endColumn, equalTo: endValue) { try commit.run(); inTxn = false }
                        }
                    }
                }
            }
            if watch != nil { try watch!.time(insertChunk) } else { try insertChunk() }
            total += rows
        }
        if inTxn {
            if watch != nil { try watch!.time { try commit.run() } } else { try commit.run() }
        }
        sqlite3_clear_bindings(insert.handle)
        return total
    }

    /// Steps `SELECT *` over a table touching every column's value; returns (rows, checksum).
    static func scan(_ db: RawDB, sql: String) throws -> (rows: Int, checksum: UInt64) {
        let s = try db.prepare(sql)
        let n = sqlite3_column_count(s.handle)
        var rows = 0
        var sum: UInt64 = 0
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw RawError(description: "scan: \(db.errmsg)") }
            rows += 1
            for i in 0..<n {
                switch sqlite3_column_type(s.handle, i) {
                case SQLITE_INTEGER: sum &+= UInt64(bitPattern: sqlite3_column_int64(s.handle, i))
                case SQLITE_FLOAT: sum &+= sqlite3_column_double(s.handle, i).bitPattern
                case SQLITE_TEXT:
                    let p = sqlite3_column_text(s.handle, i)
                    let c = sqlite3_column_bytes(s.handle, i)
                    if let p, c > 0 { sum &+= UInt64(p[0]) &+ UInt64(p[Int(c) - 1]) &+ UInt64(c) }
                case SQLITE_BLOB:
                    let p = sqlite3_column_blob(s.handle, i)?.assumingMemoryBound(to: UInt8.self)
                    let c = sqlite3_column_bytes(s.handle, i)
                    if let p, c > 0 { sum &+= UInt64(p[0]) &+ UInt64(p[Int(c) - 1]) &+ UInt64(c) }
                default: sum &+= 1
                }
            }
        }
        return (rows, sum)
    }
}
