import Foundation

/// GlobalIDs in Esri's canonical form: an uppercase UUID in braces.
public enum GlobalID {
    /// Accepts `{...}` or bare, any case; returns `{UPPERCASE}` or nil.
    public static func normalize(_ s: String) -> String? {
        // Most ids arrive already in this form (the log's own): returned as they are, with no new string.
        if isNormal(s) { return s }
        var t = Substring(s)
        if t.hasPrefix("{") && t.hasSuffix("}") { t = t.dropFirst().dropLast() }
        guard t.utf8.count == 36, let u = UUID(text: t) else { return nil }
        return "{" + u.uppercasedString + "}"
    }

    /// The UUID of a GlobalID already in the canonical form (`isNormal`), read from its bytes without a new string;
    /// nil for any other spelling.
    public static func uuid(ofNormal s: String) -> UUID? {
        isNormal(s) ? UUID(utf8: s.utf8.dropFirst().dropLast()) : nil
    }

    /// Whether `s` is already `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` with upper-case hex digits.
    static func isNormal(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { b in
            guard b.count == 38, b[0] == UInt8(ascii: "{"), b[37] == UInt8(ascii: "}") else { return false }
            for i in 1..<37 {
                let c = b[i]
                if i == 9 || i == 14 || i == 19 || i == 24 {
                    guard c == UInt8(ascii: "-") else { return false }
                } else {
                    guard (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F")) else { return false }
                }
            }
            return true
        }
    }
}
