import Crypto
import Foundation

/// The hash chain. Each event's hash is SHA-256 over the previous event's hash and an unambiguous
/// (length-prefixed) encoding of every stored column, so changing any byte of any event, reordering,
/// inserting or removing one breaks the chain from that position on.
public enum EventHash {
    public static let genesis = [UInt8](repeating: 0, count: 32)

    public static func compute(previous: [UInt8], position: Int64, id: UUID, stream: String, streamVersion: Int64,
                               type: String, payload: [UInt8], actor: String, device: String, session: String?,
                               cause: String, clientTime: String?, recordedTime: String,
                               originLog: String, originPosition: Int64, originHash: [UInt8]?) -> [UInt8] {
        var h = SHA256()
        var buf: [UInt8] = []
        buf.reserveCapacity(payload.count + 256)
        func field(_ bytes: some Collection<UInt8>) {
            let n = UInt32(bytes.count)
            buf.append(UInt8(n >> 24)); buf.append(UInt8(n >> 16 & 0xFF)); buf.append(UInt8(n >> 8 & 0xFF)); buf.append(UInt8(n & 0xFF))
            buf.append(contentsOf: bytes)
        }
        func int(_ v: Int64) { withUnsafeBytes(of: v.bigEndian) { field($0) } }
        func opt(_ s: String?) {
            if let s { buf.append(1); field(s.utf8) } else { buf.append(0) }
        }
        field(previous)
        int(position)
        withUnsafeBytes(of: id.uuid) { field($0) }
        field(stream.utf8)
        int(streamVersion)
        field(type.utf8)
        field(payload)
        field(actor.utf8)
        field(device.utf8)
        opt(session)
        field(cause.utf8)
        opt(clientTime)
        field(recordedTime.utf8)
        field(originLog.utf8)
        int(originPosition)
        if let originHash { buf.append(1); field(originHash) } else { buf.append(0) }
        h.update(data: buf)
        return Array(h.finalize())
    }

    public static func sha256(_ bytes: some DataProtocol) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
