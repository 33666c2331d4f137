import Crypto
import EditLog
import Foundation

/// What a token `generateToken` issued says: whose it is, until when, and what it is bound to (ArcGIS's `client`).
public struct IssuedToken: Sendable, Equatable {
    public enum Binding: Sendable, Equatable {
        /// Good from the address it was asked from, or the one `ip=` named (`client=requestip|ip`).
        case ip(String)
        /// Good with this `Referer` header (`client=referer`).
        case referer(String)
    }

    public var user: String
    /// Milliseconds since 1970, as ArcGIS's `expires`.
    public var expires: Int64
    public var binding: Binding

    public init(user: String, expires: Int64, binding: Binding) {
        self.user = user
        self.expires = expires
        self.binding = binding
    }
}

/// Signs and checks tokens with an HMAC-SHA256 key kept in a file of its own (mode 0600): tokens survive a
/// restart of the server, and every node given the same key file accepts them. A token is
/// `el1.<payload>.<mac>`, both base64url: the payload is the user, the expiry and the binding, NUL-separated.
public struct TokenSigner: Sendable {
    let keyBytes: [UInt8]
    var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public init(key: [UInt8]) { keyBytes = key }

    /// The key in `path`, created (32 random bytes, hex, 0600) where there is none. A key file that others can
    /// read is refused: whoever reads it can sign tokens for any user.
    public static func loadOrCreate(at path: String) throws(EditLogError) -> TokenSigner {
        let fm = FileManager.default
        if !fm.fileExists(atPath: path) {
            let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
            let hex = Hex.encode(bytes) + "\n"
            // O_EXCL: two nodes starting at once do not overwrite each other's key.
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            if fd >= 0 {
                let ok = hex.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) } == hex.utf8.count
                let synced = fsync(fd) == 0
                close(fd)
                guard ok && synced else { throw EditLogError(.io, "cannot write the token key", at: path) }
            } else if errno != EEXIST {
                throw EditLogError(.io, "cannot create the token key: \(String(cString: strerror(errno)))", at: path)
            }
        }
        guard let attributes = try? fm.attributesOfItem(atPath: path), let mode = attributes[.posixPermissions] as? Int else {
            throw EditLogError(.io, "cannot read the token key's permissions", at: path)
        }
        guard mode & 0o077 == 0 else {
            throw EditLogError(.validation, "the token key can be read by others (mode \(String(mode, radix: 8))): run chmod 600 on it", at: path)
        }
        guard let data = fm.contents(atPath: path) else { throw EditLogError(.io, "cannot read the token key", at: path) }
        let hex = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard hex.count == 64, let bytes = Hex.decode(hex) else { throw EditLogError(.corrupt, "the token key is not 64 hex digits", at: path) }
        return TokenSigner(key: bytes)
    }

    public func sign(_ token: IssuedToken) -> String {
        let (kind, value): (String, String) = switch token.binding {
        case .ip(let ip): ("ip", ip)
        case .referer(let r): ("referer", r)
        }
        let payload = Array([token.user, String(token.expires), kind, value].joined(separator: "\u{0}").utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return "el1." + Base64.encodeURL(payload) + "." + Base64.encodeURL(Array(mac))
    }

    /// The token `text` signed by this key, whatever its expiry; nil for anything else.
    public func verify(_ text: String) -> IssuedToken? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "el1", let payload = Base64.decodeURL(parts[1]), let mac = Base64.decodeURL(parts[2]),
              HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: payload, using: key) else { return nil }
        let fields = String(decoding: payload, as: UTF8.self).split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 4, let expires = Int64(fields[1]) else { return nil }
        switch fields[2] {
        case "ip": return IssuedToken(user: fields[0], expires: expires, binding: .ip(fields[3]))
        case "referer": return IssuedToken(user: fields[0], expires: expires, binding: .referer(fields[3]))
        default: return nil
        }
    }
}
