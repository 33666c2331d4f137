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
        return BlobWriter(db: db, sha256: sha256, size: size)
    }
}

/// Reads stored blobs, whole or piece by piece.
public enum BlobReading {
    /// A stored blob's size, or nil when the log does not hold it.
    public static func size(_ db: Database, sha256: [UInt8]) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT size FROM blobs WHERE sha256 = ?"), arguments: [Data(sha256)])
    }

    /// Hands a stored blob's bytes to `body` in order, in pieces of at most `BlobStorage.inlineLimit` bytes (valid
    /// during the call only). Returns the size the log lists for it, or nil (and calls nothing) when the log does
    /// not hold it. The bytes are not checked against the SHA-256: a caller that needs them right hashes them.
    @discardableResult
    public static func pieces(_ db: Database, sha256: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64? {
        // One row, read whole (an inline blob is at most `BlobStorage.inlineLimit` bytes): no statement is left
        // stepping while `body` runs.
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT size, data FROM blobs WHERE sha256 = ?"), arguments: [Data(sha256)]) else { return nil }
        let size: Int64 = row[0]
        let inline = row.dataNoCopy(atIndex: 1) ?? Data()
        if inline.isEmpty && size > 0 {
            try chunks(db, sha256: sha256) { _, data in try data.withUnsafeBytes { try body($0) } }
        } else {
            try inline.withUnsafeBytes { try body($0) }
        }
        return size
    }

    /// How a stored blob is read piece by piece (`piece`): its size and its pieces' count (1 for a blob stored
    /// inline, its chunks' for one stored in chunks), or nil when the log does not hold it.
    public static func layout(_ db: Database, sha256: [UInt8]) throws -> (size: Int64, pieces: Int)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT size, length(data) FROM blobs WHERE sha256 = ?"), arguments: [Data(sha256)]) else { return nil }
        let size: Int64 = row[0], inline: Int = row[1]
        guard isChunkedRow(size: size, inlineBytes: inline) else { return (size, 1) }
        let n = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM blob_chunks WHERE sha256 = ?"), arguments: [Data(sha256)]) ?? 0
        return (size, n)
    }

    /// Piece `index` of a stored blob (`layout`): its bytes for a blob stored inline (index 0), else chunk `index`;
    /// nil when there is no such piece.
    public static func piece(_ db: Database, sha256: [UInt8], index: Int) throws -> [UInt8]? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT size, data FROM blobs WHERE sha256 = ?"), arguments: [Data(sha256)]) else { return nil }
        let size: Int64 = row[0]
        let inline = row.dataNoCopy(atIndex: 1) ?? Data()
        guard isChunkedRow(size: size, inlineBytes: inline.count) else { return index == 0 ? [UInt8](inline) : nil }
        return try Data.fetchOne(db.cachedStatement(sql: "SELECT data FROM blob_chunks WHERE sha256 = ? AND seq = ?"),
                                 arguments: [Data(sha256), index]).map { [UInt8]($0) }
    }

    /// Whether a `blobs` row of `size` bytes whose `data` holds `inlineBytes` keeps its bytes in `blob_chunks`.
    public static func isChunkedRow(size: Int64, inlineBytes: Int) -> Bool { inlineBytes == 0 && size > 0 }

    /// The `blob_chunks` rows of a blob in order: each one's number and bytes (valid during the call only).
    public static func chunks(_ db: Database, sha256: [UInt8], _ body: (Int64, Data) throws -> Void) throws {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT seq, data FROM blob_chunks WHERE sha256 = ? ORDER BY seq"),
                                       arguments: [Data(sha256)])
        while let row = try rows.next() { try body(row[0], row.dataNoCopy(atIndex: 1) ?? Data()) }
    }

    /// A whole stored blob (for a caller that sends it whole: an HTTP response, an upload), or nil.
    public static func whole(_ db: Database, sha256: [UInt8]) throws -> [UInt8]? {
        guard let size = try size(db, sha256: sha256) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(Int(size))
        try pieces(db, sha256: sha256) { out.append(contentsOf: $0) }
        return out
    }
}
