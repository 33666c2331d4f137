@testable import EditLogBundle
import EditLog
import EditLogStore
import Foundation
import GRDB
import Testing

/// A bundle's event lines are written from the stored columns (`BundleEventLine`), not through `RecordedEvent.json`:
/// byte for byte the same line, and an export refuses an event its chain does not vouch for.
@Suite struct BundleEventLineTests {
    /// An `events` table with the log's columns and no constraints, for rows no log would hold.
    static func createEventsTable(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE events (position INTEGER PRIMARY KEY, id BLOB, stream TEXT, stream_version INTEGER, type TEXT, payload TEXT,
                actor TEXT, device TEXT, session TEXT, cause TEXT, client_time TEXT, recorded_time TEXT, origin_log TEXT,
                origin_position INTEGER, origin_hash BLOB, hash BLOB)
            """)
    }

    /// Random rows (strings with quotes, backslashes, newlines, control and non-ASCII characters; NULL optional
    /// columns; imported events with an origin hash; payloads of every JSON kind stored canonically): the line
    /// from the columns equals the canonical JSON of the decoded event plus `previousHash`.
    @Test func theLineFromTheColumnsIsTheCanonicalJSONOfTheDecodedEvent() throws {
        let gen = JSONParserPropertyTests()
        var r = SplitMix64(seed: 20261124)
        func text() -> String { gen.string(&r) + ["", "\u{1}", "\t", "é☃", "\u{7f}", "\u{1F333}"][r.below(6)] + gen.string(&r) }
        func bytes(_ n: Int) -> Data { Data((0..<n).map { _ in UInt8(r.below(256)) }) }
        let db = try DatabaseQueue()
        try db.write { db in
            try Self.createEventsTable(db)
            for p in 1...600 {
                let payload = gen.document(&r, depth: 0).0.serialized()
                try db.execute(sql: "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments: [
                    p, bytes(16), text(), gen.integer(&r), text(), payload, text(), text(), r.below(3) == 0 ? nil : text(), text(),
                    r.below(3) == 0 ? nil : text(), text(), text(), gen.integer(&r), r.below(2) == 0 ? nil : bytes(32), bytes(32),
                ])
            }
            var lines = 0
            try EventReading.step(db, sql: "SELECT \(EventReading.columns) FROM events ORDER BY position", arguments: []) { row in
                let previous = [UInt8](bytes(32))
                var line: [UInt8] = []
                try EventColumnLoader().withColumns(of: row) { loaded in
                    // The loaded columns answer what the statement answers, NULLs included: integers by value, the
                    // others as bytes.
                    for c in EventHash.Column.allCases {
                        if c.isInteger {
                            #expect(loaded.integer(c) == row.integer(c), "\(c.name)")
                        } else {
                            #expect(loaded.bytes(c).map { Array($0) } == row.bytes(c).map { Array($0) }, "\(c.name)")
                        }
                    }
                    try previous.withUnsafeBytes { try BundleEventLine.write(loaded, previous: $0, to: &line) }
                }
                var o = try EventReading.decode(row).json.objectValue!
                o["previousHash"] = .string(Hex.encode(previous))
                let expected = JSONValue.object(o).serializedBytes()
                #expect(line == expected, "\(String(decoding: line, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
                // The reader's direct decoding gives what a parse of the line gives, and finds the payload's bytes.
                var parsed = try JSONParser.parse(line).objectValue!
                parsed["previousHash"] = nil
                let event = try RecordedEvent(json: .object(parsed))
                let decoded = line.withUnsafeBufferPointer { BundleEventLine.decode($0) }
                #expect(decoded?.event == event && decoded?.previous == previous)
                #expect(decoded.map { Array(line[$0.payload]) } == event.payload.serializedBytes())
                // The same line in another layout (a space after a key) is left to the JSON parser.
                var spaced = line
                spaced.insert(UInt8(ascii: " "), at: line.firstIndex(of: UInt8(ascii: ":"))! + 1)
                #expect(spaced.withUnsafeBufferPointer { BundleEventLine.decode($0) } == nil)
                lines += 1
                return true
            }
            #expect(lines == 600)
        }
    }

    /// An event altered in the log (its chain broken) is not exported: the export fails naming its position and
    /// leaves no bundle behind.
    @Test func anAlteredEventIsNotExported() throws {
        let d = TempDir()
        try SharedBundle.shared.copyLog(to: d.file("log.sqlite"))
        try RawLog.writeWithoutTransaction(d.file("log.sqlite")) { db in
            try db.execute(sql: "DROP TRIGGER events_append_only_update; UPDATE events SET actor = 'mallory' WHERE position = 7")
        }
        let log = try EditLog.open(at: d.file("log.sqlite"))
        defer { log.close() }
        expectBundleError(.corrupt, "position 7") { _ = try log.exportBundle(to: d.file("out.bundle")) }
        #expect(!FileManager.default.fileExists(atPath: d.file("out.bundle")))
        // From after the altered event on, the export goes through, and its bundle reads clean.
        _ = try log.exportBundle(to: d.file("tail.bundle"), since: .position(7))
        _ = try BundleFixture.read(d.file("tail.bundle"))
    }
}

extension BundleEventLineTests {
    /// The line's buffer is sized from its columns before it is written: a row of empty strings, NULL optional
    /// columns, empty hashes and the longest integers (the fewest bytes that grow with the columns, the most that
    /// do not) is written whole and exact.
    @Test func theLeastRowFitsItsBuffer() throws {
        let db = try DatabaseQueue()
        try db.write { db in
            try Self.createEventsTable(db)
            try db.execute(sql: "INSERT INTO events VALUES (?, ?, '', ?, '', '0', '', '', NULL, '', NULL, '', '', ?, NULL, ?)",
                           arguments: [Int64.max, Data(count: 16), Int64.min, Int64.min, Data()])
            var lines: [String] = []
            try EventReading.step(db, sql: "SELECT \(EventReading.columns) FROM events", arguments: []) { row in
                var line: [UInt8] = []
                try EventColumnLoader().withColumns(of: row) { row in try [UInt8]().withUnsafeBytes { try BundleEventLine.write(row, previous: $0, to: &line) } }
                lines.append(String(decoding: line, as: UTF8.self))
                return true
            }
            let m = Int64.min
            #expect(lines == ["""
                {"actor":"","cause":"","clientTime":null,"device":"","hash":"","id":"00000000-0000-0000-0000-000000000000",\
                "origin":{"hash":"","logId":"","position":\(m)},"payload":0,"position":\(Int64.max),"previousHash":"",\
                "recordedTime":"","session":null,"stream":"","streamVersion":\(m),"type":""}
                """])
        }
    }
}
