import EditLogStore
import Foundation
import GRDB
import Testing

/// `BindArena`: values bound from it (SQLite does not copy them) are stored as given, in the room it has and in the
/// allocations of their own it makes for values that do not fit; its addresses never move before `reset()`.
@Suite struct BindArenaTests {
    @Test func textsAndBlobsBoundFromTheArenaAreStoredAsGiven() throws {
        let db = try DatabaseQueue()
        let arena = BindArena(capacity: 64)
        try db.write { db in
            try db.execute(sql: "CREATE TABLE t (a TEXT, b BLOB, c TEXT, d TEXT)")
            let statement = try db.makeStatement(sql: "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)")
            var rows: [(String, [UInt8], String, String)] = []
            for i in 0..<50 {
                // Every size from none to more than the arena holds at once: the later values of a row overflow it.
                let a = String(repeating: "é", count: i)
                let b = (0..<(i * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }
                let c = "row \(i)", d = String(repeating: "x", count: 100 + i)
                try RawBindings.execute(statement.sqliteStatement, on: db.sqliteConnection, sql: statement.sql, arena: arena) { bind in
                    bind.bind(1, a)
                    b.withUnsafeBytes { bind.bind(2, blob: $0) }
                    bind.bind(3, c)
                    bind.bind(4, .some(d))
                }
                rows.append((a, b, c, d))
            }
            let stored = try Row.fetchAll(db, sql: "SELECT a, b, c, d FROM t ORDER BY rowid")
            #expect(stored.count == rows.count)
            for (row, want) in zip(stored, rows) {
                #expect(row[0] as String == want.0)
                #expect([UInt8](row[1] as Data? ?? Data()) == want.1)
                #expect(row[2] as String == want.2)
                #expect(row[3] as String == want.3)
            }
        }
    }

    @Test func copiesStayPutUntilReset() {
        let arena = BindArena(capacity: 16)
        let first: [UInt8] = Array("0123456789".utf8), second: [UInt8] = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        let p1 = first.withUnsafeBytes { arena.copy($0) }
        let p2 = second.withUnsafeBytes { arena.copy($0) }  // does not fit what is left: an allocation of its own
        let p3 = [UInt8](repeating: 0xAB, count: 6).withUnsafeBytes { arena.copy($0) }  // fits the room left
        #expect(Array(UnsafeRawBufferPointer(start: p1, count: first.count)) == first)
        #expect(Array(UnsafeRawBufferPointer(start: p2, count: second.count)) == second)
        #expect(Array(UnsafeRawBufferPointer(start: p3, count: 6)) == [UInt8](repeating: 0xAB, count: 6))
        arena.reset()
        let p4 = first.withUnsafeBytes { arena.copy($0) }
        #expect(p4 == p1, "after reset the room is used from its start again")
    }
}
