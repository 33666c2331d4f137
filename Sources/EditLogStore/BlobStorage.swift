import EditLogCore
import Foundation
import GRDB

/// How attachment bytes are stored, content-addressed by their SHA-256.
///
/// A blob of up to `inlineLimit` bytes is one `blobs` row that holds them. A larger one is a `blobs` row with its
/// size and empty `data`, and its bytes in `blob_chunks`, `chunkBytes` to a row (the last one shorter), numbered
/// from 0. So an import, an export or a verify holds one piece of a large attachment at a time, never all of it.
public enum BlobStorage {
    /// The largest blob stored in its `blobs` row (a photo of a field app, typically).
    public static let inlineLimit: Int64 = 4 << 20
    /// The bytes of one `blob_chunks` row, and of one piece as a bundle reader hands it over.
    public static let chunkBytes = 1 << 20

    /// Whether a blob of `size` bytes is stored in chunks.
    public static func isChunked(size: Int64) -> Bool { size > inlineLimit }
}

/// A piece of a blob on its way into a log: `bytes` are the blob's from `offset`. A blob comes as its pieces in
/// order, from offset 0 to the last piece, which ends at `size` (a blob of 0 bytes is one empty piece).
public struct BlobPiece: Sendable {
    /// The blob's SHA-256 (32 bytes).
    public let sha256: [UInt8]
    /// The whole blob's size.
    public let size: Int64
    public let offset: Int64
    public var bytes: [UInt8]

    public init(sha256: [UInt8], size: Int64, offset: Int64, bytes: [UInt8]) {
        self.sha256 = sha256
        self.size = size
        self.offset = offset
        self.bytes = bytes
    }

    /// A whole blob as its single piece.
    public init(whole bytes: [UInt8]) {
        self.init(sha256: EventHash.sha256(bytes), size: Int64(bytes.count), offset: 0, bytes: bytes)
    }

    public var isFirst: Bool { offset == 0 }
    public var isLast: Bool { offset + Int64(bytes.count) == size }
    public var isWhole: Bool { isFirst && isLast }
    public var shaText: String { Hex.encode(sha256) }
}

/// Writes one blob into the store as its bytes come (`Appender.beginBlob`), and checks their count and SHA-256
/// before it lists the blob (`finish`). Use it inside the write transaction that began it: a failure leaves rows
/// that only the transaction's rollback removes.
public struct BlobWriter {
    let db: Database
    public let sha256: [UInt8]
    public let size: Int64
    private var digest = ContentDigest()
    /// The bytes not stored yet: the whole blob when it is stored inline, else the current chunk.
    private var buffer: [UInt8] = []
    private var received: Int64 = 0
    private var nextChunk: Int64 = 0

    init(db: Database, sha256: [UInt8], size: Int64) {
        self.db = db
        self.sha256 = sha256
        self.size = size
        buffer.reserveCapacity(BlobStorage.isChunked(size: size) ? BlobStorage.chunkBytes : Int(size))
    }

    private var what: String { "attachment bytes \(Hex.encode(sha256))" }

    /// The blob's next bytes.
    public mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard received + Int64(bytes.count) <= size else {
            throw EditLogError(.invalidInput, "\(what): more bytes than the \(size) announced", at: "blobs/\(Hex.encode(sha256))")
        }
        received += Int64(bytes.count)
        digest.update(bytes)
        guard BlobStorage.isChunked(size: size) else { buffer.append(contentsOf: bytes); return }
        var rest = bytes[...]
        while !rest.isEmpty {
            let take = min(BlobStorage.chunkBytes - buffer.count, rest.count)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            rest = rest.dropFirst(take)
            if buffer.count == BlobStorage.chunkBytes { try storeChunk() }
        }
    }

    public mutating func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    private mutating func storeChunk() throws {
        let stmt = try db.cachedStatement(sql: "INSERT INTO blob_chunks (sha256, seq, data) VALUES (?, ?, ?)")
        try stmt.execute(arguments: [Data(sha256), nextChunk, Data(buffer)])
        nextChunk += 1
        buffer.removeAll(keepingCapacity: true)
    }

    /// Checks the count and the SHA-256 of the bytes written, then stores the rest and lists the blob.
    public consuming func finish() throws {
        guard received == size else {
            throw EditLogError(.invalidInput, "\(what): \(received) bytes of the \(size) announced", at: "blobs/\(Hex.encode(sha256))")
        }
        let got = digest.finalize()
        guard got == sha256 else {
            throw EditLogError(.invalidInput, "\(what): the bytes have SHA-256 \(Hex.encode(got))", at: "blobs/\(Hex.encode(sha256))")
        }
        let chunked = BlobStorage.isChunked(size: size)
        if chunked && !buffer.isEmpty { try storeChunk() }
        let stmt = try db.cachedStatement(sql: "INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?)")
        try stmt.execute(arguments: [Data(sha256), size, chunked ? Data() : Data(buffer)])
    }
}

extension Appender {
    /// Begins storing a blob of `size` bytes with SHA-256 `sha256` piece by piece, or nil when this log holds it
    /// already (content-addressed: the same bytes are stored once).
    public func beginBlob(sha256: [UInt8], size: Int64) throws -> BlobWriter? {
        precondition(sha256.count == 32, "a blob is keyed by its 32-byte SHA-256")
        guard try BlobReading.size(db, sha256: sha256) == nil else { return nil }
        if BlobStorage.isChunked(size: size), try BlobReading.chunkCount(db, sha256: sha256) > 0 {
            throw EditLogError(.corrupt, "the log holds chunks of attachment bytes \(Hex.encode(sha256)) that no blob lists: they were written outside EditLog (run editlog verify)")
        }
        return BlobWriter(db: db, sha256: sha256, size: size)
    }
}

/// Reads stored blobs, whole or piece by piece. A row that is not as EditLog writes it (a size that is not a
/// non-negative integer, bytes stored as text, a chunk number that is not an integer: only a change made outside
/// EditLog does that) is a `corrupt` error naming the blob, never a crash; `editlog verify` reports each.
public enum BlobReading {
    static func altered(_ sha256: [UInt8], _ what: String) -> EditLogError {
        EditLogError(.corrupt, "the stored blob \(Hex.encode(sha256)) is not as EditLog writes it: \(what) (run editlog verify)")
    }

    /// A stored blob's size, or nil when the log does not hold it.
    public static func size(_ db: Database, sha256: [UInt8]) throws -> Int64? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT size, typeof(size) FROM blobs WHERE sha256 = ?"), arguments: [Data(sha256)]) else { return nil }
        guard (row[1] as String) == "integer", let size = row[0] as Int64?, size >= 0 else { throw altered(sha256, "its size is not a byte count") }
        return size
    }

    /// A stored blob's `blobs` row: its size and its inline bytes (empty for a blob stored in chunks).
    static func storedRow(_ db: Database, sha256: [UInt8]) throws -> (size: Int64, inline: Data)? {
        let sql = "SELECT size, data, typeof(size), typeof(data) FROM blobs WHERE sha256 = ?"
        guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [Data(sha256)]) else { return nil }
        guard (row[2] as String) == "integer", let size = row[0] as Int64?, size >= 0 else { throw altered(sha256, "its size is not a byte count") }
        guard (row[3] as String) == "blob" else { throw altered(sha256, "its bytes are stored as \(row[3] as String)") }
        return (size, row[1] as Data? ?? Data())  // a fetched row owns its values: no copy
    }

    /// Hands a stored blob's bytes to `body` in order, in pieces of at most `BlobStorage.inlineLimit` bytes (valid
    /// during the call only). Returns the size the log lists for it, or nil (and calls nothing) when the log does
    /// not hold it. The bytes are not checked against the SHA-256 or the size: a caller that needs them right
    /// counts and hashes them.
    @discardableResult
    public static func pieces(_ db: Database, sha256: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64? {
        // One row, read whole (an inline blob is at most `BlobStorage.inlineLimit` bytes): no statement is left
        // stepping while `body` runs.
        guard let row = try storedRow(db, sha256: sha256) else { return nil }
        if isChunkedRow(size: row.size, inlineBytes: row.inline.count) {
            try chunks(db, sha256: sha256) { _, data in try data.withUnsafeBytes { try body($0) } }
        } else {
            try row.inline.withUnsafeBytes { try body($0) }
        }
        return row.size
    }

    /// How a stored blob is read piece by piece (`piece`): its size and the number of pieces that size makes (1 for
    /// a blob stored inline; one per `BlobStorage.chunkBytes` for one stored in chunks), or nil when the log does
    /// not hold it. What is stored may differ: the caller counts the bytes it gets.
    public static func layout(_ db: Database, sha256: [UInt8]) throws -> (size: Int64, pieces: Int)? {
        let sql = "SELECT size, length(data), typeof(size) FROM blobs WHERE sha256 = ?"
        guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [Data(sha256)]) else { return nil }
        guard (row[2] as String) == "integer", let size = row[0] as Int64?, size >= 0 else { throw altered(sha256, "its size is not a byte count") }
        guard isChunkedRow(size: size, inlineBytes: row[1] as Int? ?? 0) else { return (size, 1) }
        let chunk = Int64(BlobStorage.chunkBytes)
        return (size, Int((size + chunk - 1) / chunk))
    }

    /// Piece `index` of a stored blob (`layout`): its bytes for a blob stored inline (index 0), else chunk `index`;
    /// nil when there is no such piece.
    public static func piece(_ db: Database, sha256: [UInt8], index: Int) throws -> [UInt8]? {
        guard let row = try storedRow(db, sha256: sha256) else { return nil }
        guard isChunkedRow(size: row.size, inlineBytes: row.inline.count) else { return index == 0 ? [UInt8](row.inline) : nil }
        let sql = "SELECT data, typeof(data) FROM blob_chunks WHERE sha256 = ? AND seq = ?"
        guard let chunk = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [Data(sha256), index]) else { return nil }
        guard (chunk[1] as String) == "blob" else { throw altered(sha256, "chunk \(index) is stored as \(chunk[1] as String)") }
        return [UInt8](chunk[0] as Data? ?? Data())
    }

    /// Whether a `blobs` row of `size` bytes whose `data` holds `inlineBytes` keeps its bytes in `blob_chunks`.
    public static func isChunkedRow(size: Int64, inlineBytes: Int) -> Bool { inlineBytes == 0 && size > 0 }

    /// The `blob_chunks` rows of a blob in order: each one's number and bytes (valid during the call only).
    public static func chunks(_ db: Database, sha256: [UInt8], _ body: (Int64, Data) throws -> Void) throws {
        let sql = "SELECT seq, data, typeof(seq), typeof(data) FROM blob_chunks WHERE sha256 = ? ORDER BY seq"
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [Data(sha256)])
        while let row = try rows.next() {
            guard (row[2] as String) == "integer", (row[3] as String) == "blob" else {
                throw altered(sha256, "a chunk's number or bytes have another type (\(row[2] as String), \(row[3] as String))")
            }
            try row.withUnsafeData(atIndex: 1) { try body(row[0], $0 ?? Data()) }
        }
    }

    /// How many `blob_chunks` rows hold pieces of a blob (a blob not yet stored has none: any are strays).
    static func chunkCount(_ db: Database, sha256: [UInt8]) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM blob_chunks WHERE sha256 = ?"), arguments: [Data(sha256)]) ?? 0
    }

    /// A whole stored blob (for a caller that sends it whole: an HTTP response, an upload), or nil.
    public static func whole(_ db: Database, sha256: [UInt8]) throws -> [UInt8]? {
        var out: [UInt8] = []
        guard try pieces(db, sha256: sha256, { out.append(contentsOf: $0) }) != nil else { return nil }
        return out
    }
}
