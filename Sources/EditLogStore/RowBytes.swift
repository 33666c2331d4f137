import Foundation
import GRDB
import GRDBSQLite

/// Every row of a query as one byte stream, straight from SQLite's column buffers (no `Row`, no `String` per
/// value): for each column of each row a tag, then the value — 0 NULL; 1 and the integer (8 bytes, big-endian);
/// 2 and the double's bits (8 bytes, big-endian); 3 and the UTF-8 length (8 bytes, big-endian) and bytes for
/// text; 4 and the length and bytes for a blob. Handed to `sink` in chunks of about 64 KiB (the digests of the
/// projections hash it; chunking does not change a hash).
public enum RowBytes {
    public static func stream(_ db: Database, sql: String, _ sink: (UnsafeRawBufferPointer) -> Void) throws {
        let statement = try db.makeStatement(sql: sql)
        let stmt = statement.sqliteStatement
        let columns = sqlite3_column_count(stmt)
        let capacity = 1 << 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        var used = 0
        func flush() {
            if used > 0 { sink(UnsafeRawBufferPointer(start: buffer, count: used)) }
            used = 0
        }
        func tag(_ t: UInt8, _ word: UInt64?) {
            if used + 9 > capacity { flush() }
            buffer.storeBytes(of: t, toByteOffset: used, as: UInt8.self)
            used += 1
            if let word {
                buffer.storeBytes(of: word.bigEndian, toByteOffset: used, as: UInt64.self)
                used += 8
            }
        }
        func bytes(_ p: UnsafeRawPointer?, _ n: Int) {
            guard let p, n > 0 else { return }
            if used + n > capacity { flush() }
            if n > capacity { return sink(UnsafeRawBufferPointer(start: p, count: n)) }
            (buffer + used).copyMemory(from: p, byteCount: n)
            used += n
        }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection))) }
            for i in 0..<columns {
                switch sqlite3_column_type(stmt, i) {
                case SQLITE_NULL:
                    tag(0, nil)
                case SQLITE_INTEGER:
                    tag(1, UInt64(bitPattern: sqlite3_column_int64(stmt, i)))
                case SQLITE_FLOAT:
                    tag(2, sqlite3_column_double(stmt, i).bitPattern)
                case SQLITE_TEXT:
                    let p = sqlite3_column_text(stmt, i)
                    let n = Int(sqlite3_column_bytes(stmt, i))
                    tag(3, UInt64(n))
                    bytes(UnsafeRawPointer(p), n)
                default:
                    let p = sqlite3_column_blob(stmt, i)
                    let n = Int(sqlite3_column_bytes(stmt, i))
                    tag(4, UInt64(n))
                    bytes(p, n)
                }
            }
        }
        flush()
    }
}
