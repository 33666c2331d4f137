import Crypto
import Foundation

/// The hash chain. Each event's hash is SHA-256 over the previous event's hash and an unambiguous
/// (length-prefixed) encoding of every stored column, so changing any byte of any event, reordering,
/// inserting or removing one breaks the chain from that position on.
///
/// `encode(_:previous:into:)` is the only place in Swift that knows the encoding: the appender feeds it the values it
/// is about to insert, `verify` feeds it SQLite's column buffers, bundles feed it decoded events. The hub's store
/// computes the same encoding in SQL where it assigns positions (`editlog_append`, `EditLogHub.PostgresSchema`); a
/// change here is a new schema version there, and the store conformance suite checks that both give the same hashes.
public enum EventHash {
    public static let genesis = [UInt8](repeating: 0, count: 32)

    /// The stored columns of an event, in the order of `EventReading.columns` (the raw value is the
    /// column's index in that SELECT) and of the hash encoding.
    public enum Column: Int32, Sendable, CaseIterable {
        case position, id, stream, streamVersion, type, payload, actor, device, session, cause,
             clientTime, recordedTime, originLog, originPosition, originHash, hash

        public var name: String {
            switch self {
            case .position: "position"
            case .id: "id"
            case .stream: "stream"
            case .streamVersion: "stream_version"
            case .type: "type"
            case .payload: "payload"
            case .actor: "actor"
            case .device: "device"
            case .session: "session"
            case .cause: "cause"
            case .clientTime: "client_time"
            case .recordedTime: "recorded_time"
            case .originLog: "origin_log"
            case .originPosition: "origin_position"
            case .originHash: "origin_hash"
            case .hash: "hash"
            }
        }
        /// Columns that may be NULL.
        @inlinable public var isOptional: Bool { self == .session || self == .clientTime || self == .originHash }
        /// Columns a `Source` gives as integers (`integer(_:)`), not as bytes.
        @inlinable public var isInteger: Bool { self == .position || self == .streamVersion || self == .originPosition }
    }

    /// Where the encoding reads an event's columns from. Integers by value, everything else as bytes
    /// (text as its UTF-8), nil for NULL.
    public protocol Source {
        func integer(_ column: Column) -> Int64
        func withBytes<R>(_ column: Column, _ body: (UnsafeRawBufferPointer?) -> R) -> R
    }

    /// A required column was NULL (only a tampered row can have one).
    public struct MissingColumn: Error, Sendable {
        public let column: Column
        @inlinable public init(column: Column) { self.column = column }
    }

    /// Encodes `source` for hashing after `previous` (the previous event's hash). Every column but `hash` is
    /// covered. Throws when a required column is NULL.
    @inlinable
    public static func encode<S: Source>(_ source: S, previous: UnsafeRawBufferPointer, into e: inout Encoder) throws(MissingColumn) {
        e.reset()
        e.raw(previous)
        for column in Column.allCases where column != .hash {
            if column.isInteger {
                e.int(source.integer(column))
            } else {
                let present = source.withBytes(column) { bytes -> Bool in
                    guard let bytes else { return false }
                    if column.isOptional { e.present() }
                    e.raw(bytes)
                    return true
                }
                if !present {
                    guard column.isOptional else { throw MissingColumn(column: column) }
                    e.absent()
                }
            }
        }
    }

    /// The hash of an event given as Swift values (the appender's path).
    public static func compute(using e: inout Encoder, previous: [UInt8], _ values: Values) -> [UInt8] {
        previous.withUnsafeBytes { prev in
            do { try encode(values, previous: prev, into: &e) } catch { preconditionFailure("Values has every required column") }
        }
        return e.digest()
    }

    /// An event's columns as Swift values.
    public struct Values: Source {
        public var position: Int64
        public var id: UUID
        public var stream: String
        public var streamVersion: Int64
        public var type: String
        public var payload: [UInt8]
        public var actor: String
        public var device: String
        public var session: String?
        public var cause: String
        public var clientTime: String?
        public var recordedTime: String
        public var originLog: String
        public var originPosition: Int64
        public var originHash: [UInt8]?

        public init(position: Int64, id: UUID, stream: String, streamVersion: Int64, type: String, payload: [UInt8],
                    actor: String, device: String, session: String?, cause: String, clientTime: String?, recordedTime: String,
                    originLog: String, originPosition: Int64, originHash: [UInt8]?) {
            self.position = position; self.id = id; self.stream = stream; self.streamVersion = streamVersion; self.type = type
            self.payload = payload; self.actor = actor; self.device = device; self.session = session; self.cause = cause
            self.clientTime = clientTime; self.recordedTime = recordedTime; self.originLog = originLog
            self.originPosition = originPosition; self.originHash = originHash
        }

        public func integer(_ column: Column) -> Int64 {
            switch column {
            case .position: position
            case .streamVersion: streamVersion
            case .originPosition: originPosition
            default: 0
            }
        }

        public func withBytes<R>(_ column: Column, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
            func text(_ s: String?) -> R {
                guard var s else { return body(nil) }
                return s.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            }
            switch column {
            case .id: return withUnsafeBytes(of: id.uuid) { body($0) }
            case .stream: return text(stream)
            case .type: return text(type)
            case .payload: return payload.withUnsafeBytes { body($0) }
            case .actor: return text(actor)
            case .device: return text(device)
            case .session: return text(session)
            case .cause: return text(cause)
            case .clientTime: return text(clientTime)
            case .recordedTime: return text(recordedTime)
            case .originLog: return text(originLog)
            case .originHash: return originHash.map { $0.withUnsafeBytes { body($0) } } ?? body(nil)
            case .position, .streamVersion, .originPosition, .hash: return body(nil)
            }
        }
    }

    public static func sha256(_ bytes: some DataProtocol) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// The encoding's buffer, reused across events (no allocation per event once warm).
    public struct Encoder {
        /// The encoding is the first `count` bytes; the rest is room kept from event to event, so a column is one
        /// copy into place (not four appends for its length and one for its bytes, which showed in the export's profile).
        @usableFromInline var storage: [UInt8]
        @usableFromInline var count = 0
        public init() { storage = [UInt8](repeating: 0, count: 1_024) }
        @inlinable public mutating func reset() { count = 0 }

        @inlinable mutating func reserve(_ n: Int) {
            if count + n > storage.count { grow(to: count + n) }
        }
        @usableFromInline mutating func grow(to needed: Int) {
            storage.append(contentsOf: repeatElement(0, count: max(needed, 2 * storage.count) - storage.count))
        }
        @inlinable mutating func length(_ n: Int) {
            reserve(4)
            let at = count
            storage.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(truncatingIfNeeded: n).bigEndian, toByteOffset: at, as: UInt32.self) }
            count += 4
        }
        @inlinable public mutating func raw(_ p: UnsafeRawBufferPointer) {
            length(p.count)
            reserve(p.count)
            if let source = p.baseAddress, p.count > 0 {
                let at = count
                storage.withUnsafeMutableBytes { ($0.baseAddress! + at).copyMemory(from: source, byteCount: p.count) }
            }
            count += p.count
        }
        @inlinable public mutating func int(_ v: Int64) {
            length(8)
            reserve(8)
            let at = count
            storage.withUnsafeMutableBytes { $0.storeBytes(of: v.bigEndian, toByteOffset: at, as: Int64.self) }
            count += 8
        }
        @inlinable public mutating func present() { byte(1) }
        @inlinable public mutating func absent() { byte(0) }
        @inlinable mutating func byte(_ b: UInt8) {
            reserve(1)
            storage[count] = b
            count += 1
        }
        public func digest() -> [UInt8] { Array(sha256()) }
        /// Whether the digest of what was encoded equals `stored`, without allocating. The bytes are compared in a
        /// loop of its own: the generic `elementsEqual` was many times slower for the 32 bytes.
        public func digestEquals(_ stored: UnsafeRawBufferPointer) -> Bool {
            sha256().withUnsafeBytes { d in
                guard d.count == stored.count else { return false }
                var differ: UInt8 = 0
                for i in 0..<d.count { differ |= d[i] ^ stored[i] }
                return differ == 0
            }
        }
        /// The encoding hashed through its bytes (not `DataProtocol`'s regions).
        func sha256() -> SHA256.Digest {
            var h = SHA256()
            storage.withUnsafeBytes { h.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            return h.finalize()
        }
    }
}

/// A streaming SHA-256 for content digests (projection digests, bundle checksums), so modules other than the
/// core never reach for Crypto themselves.
public struct ContentDigest {
    var hasher = SHA256()
    public init() {}
    public mutating func update(_ bytes: some DataProtocol) { hasher.update(data: bytes) }
    public mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    public consuming func finalize() -> [UInt8] { Array(hasher.finalize()) }
}
