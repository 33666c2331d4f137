import Foundation

/// GlobalIDs in Esri's canonical form: an uppercase UUID in braces.
public enum GlobalID {
    /// Accepts `{...}` or bare, any case; returns `{UPPERCASE}` or nil.
    public static func normalize(_ s: String) -> String? {
        var t = Substring(s)
        if t.hasPrefix("{") && t.hasSuffix("}") { t = t.dropFirst().dropLast() }
        guard t.utf8.count == 36, let u = UUID(text: t) else { return nil }
        return "{" + u.uppercasedString + "}"
    }
}
