import Crypto
import Foundation

/// The hash chain. Each event's hash is SHA-256 over the previous event's hash and an unambiguous
/// (length-prefixed) encoding of every stored column, so changing any byte of any event, reordering,
/// inserting or removing one breaks the chain from that position on.
///
/// Field order: previous hash, position, id (16 bytes), stream, stream version, type, payload, actor,
/// device, session?, cause, client time?, recorded time, origin log, origin position, origin hash?.
public enum EventHash {
    public static let genesis = [UInt8](repeating: 0, count: 32)

    public static func compute(previous: [UInt8], position: Int64, id: UUID, stream: String, streamVersion: Int64,
                               type: String, payload: [UInt8], actor: String, device: String, session: String?,
                               cause: String, clientTime: String?, recordedTime: String,
                               originLog: String, originPosition: Int64, originHash: [UInt8]?) -> [UInt8] {
        var e = Encoder()
        return compute(using: &e, previous: previous, position: position, id: id, stream: stream, streamVersion: streamVersion, type: type,
                       payload: payload, actor: actor, device: device, session: session, cause: cause, clientTime: clientTime,
                       recordedTime: recordedTime, originLog: originLog, originPosition: originPosition, originHash: originHash)
    }

    /// The same, reusing an encoder's buffer (the appender's hot path).
    public static func compute(using e: inout Encoder, previous: [UInt8], position: Int64, id: UUID, stream: String, streamVersion: Int64,
                               type: String, payload: [UInt8], actor: String, device: String, session: String?,
                               cause: String, clientTime: String?, recordedTime: String,
                               originLog: String, originPosition: Int64, originHash: [UInt8]?) -> [UInt8] {
        e.reset()
        e.bytes(previous)
        e.int(position)
        withUnsafeBytes(of: id.uuid) { e.raw($0) }
        e.text(stream)
        e.int(streamVersion)
        e.text(type)
        e.bytes(payload)
        e.text(actor)
        e.text(device)
        e.optionalText(session)
        e.text(cause)
        e.optionalText(clientTime)
        e.text(recordedTime)
        e.text(originLog)
        e.int(originPosition)
        if let originHash { e.present(); e.bytes(originHash) } else { e.absent() }
        return e.digest()
    }

    public static func sha256(_ bytes: some DataProtocol) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// The encoding itself, reusable across events (the verifier feeds it SQLite's column buffers directly).
    public struct Encoder {
        public private(set) var buffer: [UInt8] = []
        public init() { buffer.reserveCapacity(512) }
        public mutating func reset() { buffer.removeAll(keepingCapacity: true) }

        @inline(__always) mutating func length(_ n: Int) {
            let v = UInt32(truncatingIfNeeded: n)
            buffer.append(UInt8(v >> 24)); buffer.append(UInt8(v >> 16 & 0xFF)); buffer.append(UInt8(v >> 8 & 0xFF)); buffer.append(UInt8(v & 0xFF))
        }
        public mutating func raw(_ p: UnsafeRawBufferPointer) { length(p.count); buffer.append(contentsOf: p) }
        public mutating func bytes(_ b: [UInt8]) { length(b.count); buffer.append(contentsOf: b) }
        public mutating func text(_ s: String) {
            var s = s
            s.withUTF8 { u in length(u.count); buffer.append(contentsOf: u) }
        }
        public mutating func int(_ v: Int64) { length(8); withUnsafeBytes(of: v.bigEndian) { buffer.append(contentsOf: $0) } }
        public mutating func present() { buffer.append(1) }
        public mutating func absent() { buffer.append(0) }
        public mutating func optionalText(_ s: String?) { if let s { present(); text(s) } else { absent() } }
        public func digest() -> [UInt8] { Array(SHA256.hash(data: buffer)) }
        /// Whether the digest of what was encoded equals `stored`, without allocating.
        public func digestEquals(_ stored: UnsafeRawBufferPointer) -> Bool {
            SHA256.hash(data: buffer).withUnsafeBytes { $0.elementsEqual(stored) }
        }
    }
}
