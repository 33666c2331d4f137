import EditLogCore
import Foundation

/// A GlobalID as a window's fold and the report's rows keep it: a `{UUID}` as normalized in its 16 bytes (no string on
/// the heap per feature), any other spelling as it is. `string` gives back the GlobalID as it came.
struct FeatureKey: Hashable, Sendable {
    private let uuid: UUID
    private let other: String?

    init(_ g: String) {
        if let u = Self.normalized(g) { uuid = u; other = nil } else { uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); other = g }
    }

    /// The UUID of `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` in upper-case hex (as `GlobalID` normalizes), read from
    /// its bytes without a string made (a fold keys every event it reads); nil for any other spelling.
    static func normalized(_ g: String) -> UUID? {
        var g = g
        return g.withUTF8 { b -> UUID? in
            guard b.count == 38, b[0] == UInt8(ascii: "{"), b[37] == UInt8(ascii: "}") else { return nil }
            var out: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var ok = true
            withUnsafeMutableBytes(of: &out) { o in
                var i = 1, n = 0
                while i < 37 && ok {
                    if i == 9 || i == 14 || i == 19 || i == 24 {
                        ok = b[i] == UInt8(ascii: "-"); i += 1; continue
                    }
                    func nibble(_ c: UInt8) -> UInt8? {
                        switch c {
                        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
                        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
                        default: nil
                        }
                    }
                    guard let hi = nibble(b[i]), let lo = nibble(b[i + 1]) else { ok = false; return }
                    o[n] = hi << 4 | lo
                    n += 1; i += 2
                }
            }
            return ok ? UUID(uuid: out) : nil
        }
    }

    var string: String { other ?? "{" + uuid.uppercasedString + "}" }

    /// In the GlobalIDs' string order (for two `{UUID}`s, the order of their bytes).
    static func precedes(_ a: FeatureKey, _ b: FeatureKey) -> Bool {
        if a.other == nil, b.other == nil {
            return withUnsafeBytes(of: a.uuid.uuid) { pa in withUnsafeBytes(of: b.uuid.uuid) { pb in memcmp(pa.baseAddress!, pb.baseAddress!, 16) < 0 } }
        }
        return a.string < b.string
    }
}
