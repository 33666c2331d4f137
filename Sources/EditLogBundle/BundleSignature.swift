import Crypto
import EditLogCore
import Foundation

/// `SHA256SUMS.sig`: an Ed25519 signature over the exact bytes of `SHA256SUMS`, as
/// `{"algorithm":"ed25519","publicKey":"<base64 raw 32 bytes>","signature":"<base64 64 bytes>"}`.
public enum BundleSignature {
    public static let algorithm = "ed25519"

    /// A new key pair: the raw private key (32 bytes) and the raw public key (32 bytes).
    public static func generateKeyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) {
        let k = Curve25519.Signing.PrivateKey()
        return (Array(k.rawRepresentation), Array(k.publicKey.rawRepresentation))
    }

    /// The public key of a raw private key.
    public static func publicKey(ofPrivate raw: [UInt8]) throws(EditLogError) -> [UInt8] {
        do { return Array(try Curve25519.Signing.PrivateKey(rawRepresentation: raw).publicKey.rawRepresentation) } catch {
            throw EditLogError(.invalidInput, "not an Ed25519 private key (expected 32 raw bytes)")
        }
    }

    /// The signature document for `sums` (the bytes of SHA256SUMS).
    static func sign(_ sums: [UInt8], privateKey raw: [UInt8]) throws(EditLogError) -> [UInt8] {
        let key: Curve25519.Signing.PrivateKey
        do { key = try Curve25519.Signing.PrivateKey(rawRepresentation: raw) } catch {
            throw EditLogError(.invalidInput, "not an Ed25519 private key (expected 32 raw bytes)")
        }
        let signature: Data
        do { signature = try key.signature(for: sums) } catch { throw EditLogError(.io, "cannot sign: \(error)") }
        let doc: JSONValue = ["algorithm": .string(algorithm), "publicKey": .string(Data(key.publicKey.rawRepresentation).base64EncodedString()),
                              "signature": .string(signature.base64EncodedString())]
        return doc.serializedBytes() + [0x0A]
    }

    /// Checks a signature document against `sums`; returns the signer's raw public key.
    static func verify(_ document: [UInt8], sums: [UInt8]) throws(EditLogError) -> [UInt8] {
        func bad(_ m: String) -> EditLogError { EditLogError(.corrupt, m, at: "SHA256SUMS.sig") }
        let doc: JSONValue
        do { doc = try JSONParser.parse(document) } catch { throw bad("not JSON (\(error.description))") }
        guard let algorithm = doc["algorithm"]?.stringValue else { throw bad("\"algorithm\" is missing") }
        guard algorithm == Self.algorithm else {
            throw EditLogError(.unsupported, "signature algorithm \"\(algorithm)\" is not supported (only ed25519)", at: "SHA256SUMS.sig")
        }
        guard let pk = doc["publicKey"]?.stringValue.flatMap({ Data(base64Encoded: $0) }), pk.count == 32,
              let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: pk) else {
            throw bad("\"publicKey\" is not a base64 Ed25519 public key (32 bytes)")
        }
        guard let sig = doc["signature"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else { throw bad("\"signature\" is not base64") }
        guard publicKey.isValidSignature(sig, for: sums) else {
            throw bad("the signature does not match SHA256SUMS: the bundle was changed after it was signed, or the signature is forged")
        }
        return Array(pk)
    }

    /// Reads a key file: base64 of the raw key bytes (whitespace around it ignored).
    public static func readKeyFile(_ path: String) throws(EditLogError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EditLogError(FileManager.default.fileExists(atPath: path) ? .io : .notFound, "cannot read the key file", at: path)
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let raw = Data(base64Encoded: text), raw.count == 32 else {
            throw EditLogError(.invalidInput, "not a key file: expected the base64 of 32 raw key bytes (editlog keys generate)", at: path)
        }
        return Array(raw)
    }

    /// Writes `<name>.key` (mode 0600) and `<name>.pub`; refuses to overwrite either.
    public static func generateKeyFiles(name: String) throws(EditLogError) -> (privatePath: String, publicPath: String, publicKey: [UInt8]) {
        let priv = name + ".key", pub = name + ".pub"
        for p in [priv, pub] where FileManager.default.fileExists(atPath: p) {
            throw EditLogError(.conflict, "\(p) already exists; keys are never overwritten", at: p)
        }
        let (k, p) = generateKeyPair()
        func write(_ path: String, _ text: String, mode: mode_t) throws(EditLogError) {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            if fd < 0 {
                let err = errno
                throw EditLogError(err == EEXIST ? .conflict : .io, err == EEXIST ? "already exists; keys are never overwritten" : "cannot create: \(String(cString: strerror(err)))", at: path)
            }
            defer { close(fd) }
            let bytes = Array((text + "\n").utf8)
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress!, $0.count) }
            if n != bytes.count { throw EditLogError(.io, "cannot write: \(String(cString: strerror(errno)))", at: path) }
            fchmod(fd, mode)
        }
        try write(priv, Data(k).base64EncodedString(), mode: 0o600)
        do { try write(pub, Data(p).base64EncodedString(), mode: 0o644) } catch {
            try? FileManager.default.removeItem(atPath: priv)
            throw error
        }
        return (priv, pub, p)
    }
}
