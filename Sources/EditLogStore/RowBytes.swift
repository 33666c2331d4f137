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
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 17)
        func flush() {
            guard !buffer.isEmpty else { return }
            buffer.withUnsafeBytes { sink($0) }
            buffer.removeAll(keepingCapacity: true)
        }
        func append(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { buffer.append(contentsOf: $0) } }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection))) }
            for i in 0..<columns {
                switch sqlite3_column_type(stmt, i) {
                case SQLITE_NULL:
                    buffer.append(0)
                case SQLITE_INTEGER:
                    buffer.append(1); append(UInt64(bitPattern: sqlite3_column_int64(stmt, i)))
                case SQLITE_FLOAT:
                    buffer.append(2); append(sqlite3_column_double(stmt, i).bitPattern)
                case SQLITE_TEXT:
                    let p = sqlite3_column_text(stmt, i)
                    let n = Int(sqlite3_column_bytes(stmt, i))
                    buffer.append(3); append(UInt64(n))
                    if let p, n > 0 { buffer.append(contentsOf: UnsafeBufferPointer(start: p, count: n)) }
                default:
                    let p = sqlite3_column_blob(stmt, i)
                    let n = Int(sqlite3_column_bytes(stmt, i))
                    buffer.append(4); append(UInt64(n))
                    if let p, n > 0 { buffer.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
                }
            }
            if buffer.count >= 1 << 16 { flush() }
        }
        flush()
    }
}
