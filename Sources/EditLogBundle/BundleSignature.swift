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

    /// What a key file holds.
    public enum KeyFileKind: Sendable, Equatable {
        case privateKey, publicKey

        /// The first line of a key file of this kind (files written before the marker have none).
        public var marker: String { self == .privateKey ? "editlog ed25519 private key" : "editlog ed25519 public key" }
        /// The extension `editlog keys generate` gives a file of this kind.
        public var pathExtension: String { self == .privateKey ? "key" : "pub" }
    }

    /// Reads a key file of the `expected` kind: the kind's marker line, then the base64 of the raw 32 key bytes
    /// (whitespace around either ignored). A file of the other kind is refused, so a public key is never used as a
    /// private one (whoever holds it could then sign as that key). A file without the marker line (written before
    /// there was one) is taken by its name: `.key` is a private key, `.pub` a public one; with another name it is
    /// refused where a private key is needed (it may be a public key) and taken as a public key where one is needed.
    public static func readKeyFile(_ path: String, as expected: KeyFileKind) throws(EditLogError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EditLogError(FileManager.default.fileExists(atPath: path) ? .io : .notFound, "cannot read the key file", at: path)
        }
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let markers: [KeyFileKind] = [.privateKey, .publicKey]
        let kind: KeyFileKind?
        let text: String
        if lines.count == 2, let k = markers.first(where: { $0.marker == lines[0] }) {
            (kind, text) = (k, lines[1])
        } else if lines.count == 1, !markers.contains(where: { $0.marker == lines[0] }) {
            let ext = URL(fileURLWithPath: path).pathExtension
            (kind, text) = (markers.first { $0.pathExtension == ext }, lines[0])
        } else {
            (kind, text) = (nil, "")
        }
        guard let raw = Data(base64Encoded: text), raw.count == 32 else {
            throw EditLogError(.invalidInput, "not a key file: expected a line \"\(expected.marker)\" and the base64 of 32 raw key bytes (editlog keys generate)", at: path)
        }
        if kind == expected || (kind == nil && expected == .publicKey) { return Array(raw) }
        switch kind {
        case .publicKey?:
            throw EditLogError(.invalidInput, "this is a public key file, not a private key: signing needs the private key (the .key file editlog keys generate "
                               + "wrote beside the .pub); anyone may hold a public key, so nothing is signed with one", at: path)
        case .privateKey?:
            throw EditLogError(.invalidInput, "this is a private key file, not a public key: --trust takes public keys (the .pub file editlog keys generate "
                               + "wrote beside the .key); keep the private key with its signer", at: path)
        case nil:
            throw EditLogError(.invalidInput, "this key file has no \"\(KeyFileKind.privateKey.marker)\" line (written before key files were marked) and its "
                               + "name does not end in .key: it may be a public key, and nothing is signed with one; if it is the private key, add that "
                               + "line before the key", at: path)
        }
    }

    /// Writes `<name>.key` (mode 0600) and `<name>.pub`, each its kind's marker line and the base64 of the raw key;
    /// refuses to overwrite either.
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
        try write(priv, KeyFileKind.privateKey.marker + "\n" + Data(k).base64EncodedString(), mode: 0o600)
        do { try write(pub, KeyFileKind.publicKey.marker + "\n" + Data(p).base64EncodedString(), mode: 0o644) } catch {
            try? FileManager.default.removeItem(atPath: priv)
            throw error
        }
        return (priv, pub, p)
    }
}
