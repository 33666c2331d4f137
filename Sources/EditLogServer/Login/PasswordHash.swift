import Crypto
import EditLog
import Foundation
import _CryptoExtras

/// A password as the users file keeps it: PBKDF2-HMAC-SHA256 over a 16-byte random salt, 32 bytes out, written
/// `pbkdf2-sha256$ROUNDS$SALT$KEY` (salt and key in base64). 600,000 rounds is OWASP's 2023 figure for this hash;
/// each line carries its own count, so a file written with more (or, for tests, fewer) still reads.
public struct PasswordHash: Sendable, Equatable {
    public static let defaultRounds = 600_000
    public static let scheme = "pbkdf2-sha256"

    public var rounds: Int
    public var salt: [UInt8]
    public var key: [UInt8]

    /// Hashes `password` with a fresh random salt (or the given one).
    public static func make(password: String, rounds: Int = defaultRounds, salt: [UInt8]? = nil) -> PasswordHash {
        let salt = salt ?? (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        return PasswordHash(rounds: rounds, salt: salt, key: derive(password, salt: salt, rounds: rounds))
    }

    /// Whether `password` is the one hashed (the comparison takes the same time wherever the bytes differ).
    public func matches(_ password: String) -> Bool {
        let candidate = Self.derive(password, salt: salt, rounds: rounds)
        guard candidate.count == key.count else { return false }
        return zip(candidate, key).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func derive(_ password: String, salt: [UInt8], rounds: Int) -> [UInt8] {
        // Cannot fail for SHA-256 with a positive round count and 32 bytes out.
        let key = try! KDF.Insecure.PBKDF2.deriveKey(from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32,
                                                      unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { Array($0) }
    }

    public var text: String { "\(Self.scheme)$\(rounds)$\(Base64.encode(salt))$\(Base64.encode(key))" }

    /// Reads `text` (see the type); `where` names the line in errors.
    public init(parsing text: Substring, where place: String) throws(EditLogError) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.scheme else {
            throw EditLogError(.invalidInput, "expected a password hash \"\(Self.scheme)$ROUNDS$SALT$KEY\"", at: place)
        }
        guard let rounds = Int(parts[1]), rounds >= 1, rounds <= 100_000_000 else {
            throw EditLogError(.invalidInput, "the hash's rounds must be a whole number from 1 to 100,000,000", at: place)
        }
        guard let salt = Base64.decode(parts[2]), salt.count >= 8 else { throw EditLogError(.invalidInput, "the hash's salt is not base64 of at least 8 bytes", at: place) }
        guard let key = Base64.decode(parts[3]), key.count == 32 else { throw EditLogError(.invalidInput, "the hash's key is not base64 of 32 bytes", at: place) }
        self.init(rounds: rounds, salt: salt, key: key)
    }

    public init(rounds: Int, salt: [UInt8], key: [UInt8]) {
        self.rounds = rounds
        self.salt = salt
        self.key = key
    }
}

/// Base64 (standard alphabet with padding) and its URL-safe form without padding, for hashes and tokens.
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
    static func decode(_ text: Substring) -> [UInt8]? { Data(base64Encoded: String(text)).map { Array($0) } }

    static func encodeURL(_ bytes: [UInt8]) -> String {
        String(encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").prefix { $0 != "=" })
    }

    static func decodeURL(_ text: Substring) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return decode(Substring(s))
    }
}
