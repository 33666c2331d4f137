extension GlobalID {
    /// The 128 bits of a GlobalID in its canonical form (`{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, upper-case
    /// hex), high word first; nil for any other text. Canonical GlobalIDs order by these bits exactly as by their
    /// text, and `canonical(high:low:)` gives the text back.
    public static func bits(_ globalId: String) -> (high: UInt64, low: UInt64)? {
        var g = globalId
        return g.withUTF8 { b -> (UInt64, UInt64)? in
            guard b.count == 38, b[0] == UInt8(ascii: "{"), b[37] == UInt8(ascii: "}"), b[9] == UInt8(ascii: "-"), b[14] == UInt8(ascii: "-"),
                  b[19] == UInt8(ascii: "-"), b[24] == UInt8(ascii: "-") else { return nil }
            // Each digit through a table (an import parses every event's GlobalID, and a branch per character cost
            // more); a byte that is no upper-case hex digit sets a bit above the nibble.
            return hexNibbles.withUnsafeBufferPointer { t -> (UInt64, UInt64)? in
                var high: UInt64 = 0, low: UInt64 = 0, bad: UInt8 = 0
                for i in Self.highDigits {
                    let v = t[Int(b[i])]
                    bad |= v
                    high = high << 4 | UInt64(v)
                }
                for i in Self.lowDigits {
                    let v = t[Int(b[i])]
                    bad |= v
                    low = low << 4 | UInt64(v)
                }
                return bad & 0xF0 == 0 ? (high, low) : nil
            }
        }
    }

    /// Where the 16 hex digits of each word are in the canonical text.
    private static let highDigits: [Int] = Array(1...8) + Array(10...13) + Array(15...18)
    private static let lowDigits: [Int] = Array(20...23) + Array(25...36)
    /// Each byte's value as an upper-case hex digit; 0x10 for any other byte.
    private static let hexNibbles: [UInt8] = (0...255).map { c -> UInt8 in
        switch UInt8(c) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt8(c) - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt8(c) - UInt8(ascii: "A") + 10
        default: return 0x10
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// The canonical text of the GlobalID whose bits are `high`, `low` (the inverse of `bits(_:)`).
    public static func canonical(high: UInt64, low: UInt64) -> String {
        return String(unsafeUninitializedCapacity: 38) { out in
            out[0] = UInt8(ascii: "{")
            var j = 1
            for n in 0..<32 {
                if n == 8 || n == 12 || n == 16 || n == 20 { out[j] = UInt8(ascii: "-"); j += 1 }
                let word = n < 16 ? high : low
                out[j] = hexDigits[Int(word >> UInt64(60 - 4 * (n % 16)) & 0xF)]
                j += 1
            }
            out[37] = UInt8(ascii: "}")
            return 38
        }
    }
}

/// A GlobalID held in 17 bytes instead of a string (a feature's key in bookkeeping that lasts a whole import): its
/// bits when canonical, else its text. Ordered as the text is.
public enum GlobalIDKey: Hashable, Comparable, Sendable {
    case bits(UInt64, UInt64)
    case text(String)

    public init(_ globalId: String) {
        if let (h, l) = GlobalID.bits(globalId) { self = .bits(h, l) } else { self = .text(globalId) }
    }

    public var globalId: String {
        switch self {
        case .bits(let h, let l): return GlobalID.canonical(high: h, low: l)
        case .text(let t): return t
        }
    }

    public static func < (a: GlobalIDKey, b: GlobalIDKey) -> Bool {
        if case .bits(let ah, let al) = a, case .bits(let bh, let bl) = b { return ah != bh ? ah < bh : al < bl }
        return a.globalId < b.globalId
    }
}
