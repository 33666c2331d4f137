import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB
import GRDBSQLite

/// What `verify` found. `ok` only when every check passed.
public struct VerifyReport: Sendable {
    public var events: Int64 = 0
    public var headHash: String = Hex.encode(EventHash.genesis)
    public var blobs: Int64 = 0
    /// The first position at which the log is wrong, if any.
    public var firstBadPosition: Int64?
    public var problems: [String] = []
    public var projectionsChecked = false
    /// (position, sha256) of every staged attachment the chain scan saw.
    var stagedAttachments: [(Int64, String)] = []
    public var ok: Bool { problems.isEmpty }

    /// Records a problem; the first one with a position names the first bad position.
    mutating func fail(_ position: Int64?, _ message: String) {
        if firstBadPosition == nil, let position { firstBadPosition = position }
        problems.append(position.map { "position \($0): \(message)" } ?? message)
    }
    public init() {}

    public var json: JSONValue {
        ["ok": .bool(ok), "events": .int(events), "headHash": .string(headHash), "blobs": .int(blobs),
         "firstBadPosition": firstBadPosition.map { .int($0) } ?? .null, "projectionsChecked": .bool(projectionsChecked),
         "problems": .array(problems.map { .string($0) })]
    }
}

public enum Verifier {
    /// SQLite's own integrity check (tables and indexes agree), the store's definitions exactly as the
    /// migrations create them (a dropped constraint or a neutered trigger is tampering), and `log_meta`.
    public static func verifyStructure(_ db: Database, logId: String, into r: inout VerifyReport) throws {
        let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check(20)")
        if integrity != ["ok"] { r.problems.append("SQLite integrity_check: \(integrity.prefix(3).joined(separator: "; "))") }
        let expected = try EventStore.expectedDefinitions(applied: EventStore.appliedMigrations(db))
        let actual = try EventStore.definitions(db)
        for key in Set(expected.keys).union(actual.keys).sorted() where expected[key] != actual[key] {
            if actual[key] == nil { r.problems.append("\(key) is missing") }
            else if expected[key] == nil { r.problems.append("\(key) is not part of an EditLog log") }
            else { r.problems.append("\(key) was redefined: \(actual[key]!.prefix(120))") }
        }
        let meta = try Row.fetchAll(db, sql: "SELECT key, value FROM log_meta ORDER BY key").map { "\($0[0] as String)=\($0[1] as String)" }
        if meta != ["format=\(EventStore.formatVersion)", "log_id=\(logId)"] {
            r.problems.append("log_meta was changed: \(meta.joined(separator: ", ").prefix(200))")
        }
    }

    /// Recomputes the hash chain from the stored bytes and checks gap-free positions, stream versions and
    /// origins. Streams rows; never decodes payload JSON.
    public static func verifyChain(_ db: Database, logId: String, into r: inout VerifyReport, progress: ((Int64, Int64) -> Void)? = nil) throws {
        let total = try EventReading.count(db)
        var prev = EventHash.genesis
        var expected: Int64 = 1
        var versions: [String: Int64] = [:]
        var enc = EventHash.Encoder()
        let localLog = Array(logId.utf8)
        let attachmentStaged = Array(EventType.attachmentStaged.rawValue.utf8)
        // Its own stepping loop rather than `EventReading.step`: a closure over this much mutable state made the
        // chain scan slower (tools/bench verify; `tools/BENCH-RESULTS.md`).
        let statement = try db.makeStatement(sql: "SELECT \(EventReading.columns) FROM events ORDER BY position")
        let stmt = statement.sqliteStatement
        let row = StatementEventColumns(stmt)
        rows: while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection))) }
            let position = row.integer(.position)
            if position != expected {
                r.fail(expected, "position \(expected) is missing (next stored is \(position))")
                break
            }
            guard let id = row.bytes(.id), id.count == 16 else { r.fail(position, "event id is not 16 bytes"); break }
            guard let storedHash = row.bytes(.hash), storedHash.count == 32 else { r.fail(position, "hash is missing"); break }
            let missing = prev.withUnsafeBytes { previous -> EventHash.Column? in
                do throws(EventHash.MissingColumn) { try EventHash.encode(row, previous: previous, into: &enc); return nil } catch { return error.column }
            }
            if let missing { r.fail(position, "\(missing.name) is NULL"); break }
            if !enc.digestEquals(storedHash) {
                r.fail(position, "hash mismatch: the event was altered (stored \(Hex.encode(storedHash).prefix(16))…, computed \(Hex.encode(enc.digest()).prefix(16))…)")
                break
            }
            let originLog = row.bytes(.originLog)!  // encode checked every required column
            if row.bytes(.originHash) == nil && (!originLog.elementsEqual(localLog) || row.integer(.originPosition) != position) {
                r.fail(position, "origin of a local event does not match this log")
                break
            }
            let stream = String(decoding: row.bytes(.stream)!, as: UTF8.self)
            let version = row.integer(.streamVersion)
            let v = (versions[stream] ?? 0) + 1
            if version != v { r.fail(position, "stream \(stream) version \(version), expected \(v)"); break }
            versions[stream] = v
            // Staged attachments: their bytes must be in `blobs` (checked after the scan).
            if row.bytes(.type)!.elementsEqual(attachmentStaged) {
                let payload = row.bytes(.payload)!
                guard let sha = (try? JSONParser.parse(buffer: payload.bindMemory(to: UInt8.self)))?["sha256"]?.stringValue else {
                    r.fail(position, "\(EventType.attachmentStaged.rawValue) payload has no sha256"); break
                }
                r.stagedAttachments.append((position, sha))
            }
            prev.withUnsafeMutableBytes { $0.copyMemory(from: storedHash) }  // equal to what was computed
            r.events = position
            expected += 1
            if let progress, position % 20_000 == 0 { progress(position, total) }
        }
        r.headHash = Hex.encode(prev)
    }

    /// Every blob is stored under the SHA-256 of its bytes, and every staged attachment's bytes are present.
    public static func verifyBlobs(_ db: Database, into r: inout VerifyReport) throws {
        // Blobs: each is stored under the SHA-256 of its bytes.
        // A large one's bytes are in `blob_chunks`, read a chunk at a time (`BlobStorage`).
        let hasChunks = try db.tableExists("blob_chunks")
        // Each row as EditLog writes it: an integer size, bytes as a BLOB (text would read otherwise elsewhere), and
        // for a chunked blob its chunks numbered 0, 1, … with integers, 1 MiB each but the last.
        let blobs = try Row.fetchCursor(db, sql: "SELECT sha256, size, data, typeof(size), typeof(data) FROM blobs")
        while let row = try blobs.next() {
            let key = [UInt8](row[0] as Data)
            r.blobs += 1
            let sizeType: String = row[3], dataType: String = row[4]
            guard sizeType == "integer", dataType == "blob" else {
                r.fail(nil, "blob \(Hex.encode(key)) is not as EditLog writes it (its size is stored as \(sizeType), its bytes as \(dataType))"); continue
            }
            let size: Int64 = row[1]
            try row.withUnsafeData(atIndex: 2) { data in
                try verifyBlob(db, key: key, size: size, inline: data ?? Data(), hasChunks: hasChunks, into: &r)
            }
        }
        // Chunks belong to a blob listed as chunked: any other was written outside EditLog.
        let strays = !hasChunks ? 0 : try Int64.fetchOne(db, sql: """
            SELECT COUNT(*) FROM blob_chunks c WHERE NOT EXISTS
              (SELECT 1 FROM blobs b WHERE b.sha256 = c.sha256 AND length(b.data) = 0 AND b.size > 0)
            """) ?? 0
        if strays > 0 { r.fail(nil, "\(strays) blob chunk(s) belong to no blob stored in chunks") }
        // Every staged attachment's bytes are present (the chain scan collected them).
        let present = try db.cachedStatement(sql: "SELECT 1 FROM blobs WHERE sha256 = ?")
        for (pos, sha) in r.stagedAttachments {
            guard let key = Hex.decode(sha), key.count == 32 else { r.fail(pos, "attachment event has no sha256"); continue }
            if try Bool.fetchOne(present, arguments: [Data(key)]) != true {
                r.fail(pos, "attachment bytes \(sha.prefix(16))… are missing")
            }
        }
    }

    /// One `blobs` row of the right types: its inline bytes, or its chunks, hold the bytes of its SHA-256 and size.
    static func verifyBlob(_ db: Database, key: [UInt8], size: Int64, inline data: Data, hasChunks: Bool, into r: inout VerifyReport) throws {
        let name = "blob \(Hex.encode(key))"
        guard BlobReading.isChunkedRow(size: size, inlineBytes: data.count) else {
            if EventHash.sha256(data) != key || size != Int64(data.count) { r.fail(nil, "\(name) does not match its content") }
            return
        }
        // A log of an earlier version read without its migration has no chunk table: and no chunked blob.
        guard hasChunks else { r.fail(nil, "\(name) does not match its content (empty, listed as \(size) bytes)"); return }
        let chunkBytes = Int64(BlobStorage.chunkBytes)
        let pieces = (size + chunkBytes - 1) / chunkBytes
        var digest = ContentDigest(), count: Int64 = 0, seen: Int64 = 0, inOrder = true, typed = true, cut = true
        let chunks = try Row.fetchCursor(db.cachedStatement(sql: "SELECT seq, data, typeof(seq), typeof(data) FROM blob_chunks WHERE sha256 = ? ORDER BY seq"),
                                         arguments: [Data(key)])
        while let c = try chunks.next() {
            if (c[2] as String) != "integer" || (c[3] as String) != "blob" { typed = false }
            if (c[0] as Int64) != seen { inOrder = false }
            let n = try c.withUnsafeData(atIndex: 1) { bytes -> Int64 in
                digest.update(bytes ?? Data())
                return Int64(bytes?.count ?? 0)
            }
            if n != (seen < pieces - 1 ? chunkBytes : size - (pieces - 1) * chunkBytes) { cut = false }
            seen += 1
            count += n
        }
        if !typed || !inOrder || count != size || digest.finalize() != key {
            r.fail(nil, "\(name) does not match its content (its chunks are \(typed ? "" : "not all integer-numbered blobs, ")\(inOrder ? "" : "not numbered in order, ")\(count) bytes of \(size))")
        } else if !cut || seen != pieces {
            r.fail(nil, "\(name) is not stored as EditLog writes it: \(seen) chunks where \(pieces) of \(chunkBytes) bytes (the last shorter) are expected")
        }
    }

    /// Rebuilds the projections in memory and compares them with the stored ones, table by table.
    public static func verifyProjections(_ db: Database, into r: inout VerifyReport) throws {
        let stored = try Projections.digest(db)
        let rebuilt: (digest: String, tables: [String: String], definitions: [String: String], changeIndex: String?)
        do { rebuilt = try Projections.rebuiltInMemory(from: db) } catch let e as EditLogError where e.kind == .corrupt {
            // A stored event the projector cannot apply (a malformed payload): named by its position.
            r.fail(e.position, "projections cannot be rebuilt: \(e.message)")
            return
        }
        r.projectionsChecked = true
        let storedDefinitions = try Projections.definitions(db)
        for key in Set(storedDefinitions.keys).union(rebuilt.definitions.keys).sorted() where storedDefinitions[key] != rebuilt.definitions[key] {
            r.problems.append("projection \(key) differs from a rebuild's definition; run `editlog rebuild`")
        }
        if stored.digest != rebuilt.digest {
            let tables = Set(stored.tables.keys).union(rebuilt.tables.keys).sorted()
            let differing = tables.filter { stored.tables[$0] != rebuilt.tables[$0] }
            r.problems.append("projections differ from a rebuild in \(differing.joined(separator: ", ")); run `editlog rebuild`")
        }
        if let stored = try ChangeIndex.digest(db), stored != rebuilt.changeIndex {
            r.problems.append("the change index differs from a rebuild's; run `editlog rebuild`")
        }
    }
}
