import Foundation

/// UUID text without Foundation's `sprintf`/`sscanf` round trip (which showed in the profiles of a sync and an
/// import: they print and parse one or more ids per event). Same text as `uuidString` (lowercased for
/// `lowercasedString`); `UUID(text:)` accepts exactly the 8-4-4-4-12 hex form, either case.
extension UUID {
    /// `uuidString.lowercased()`.
    public var lowercasedString: String { text(uppercase: false) }

    /// `uuidString`: uppercase hex.
    public var uppercasedString: String { text(uppercase: true) }

    func text(uppercase: Bool) -> String {
        withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                Self.writeText(raw, uppercase: uppercase, to: out.baseAddress!)
                return 36
            }
        }
    }

    /// Writes the 36-byte text of a UUID's 16 bytes (8-4-4-4-12 hex digits) at `out`.
    public static func writeText(_ bytes: UnsafeRawBufferPointer, uppercase: Bool, to out: UnsafeMutablePointer<UInt8>) {
        precondition(bytes.count == 16, "a UUID is 16 bytes")
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        digits.withUTF8Buffer { hex in
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                let b = bytes[i]
                out[o] = hex[Int(b >> 4)]; out[o + 1] = hex[Int(b & 0x0F)]
                o += 2
            }
        }
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hex digits of either case); nil for anything else.
    public init?(text: some StringProtocol) {
        self.init(utf8: text.utf8)
    }

    /// `init?(text:)` from the text's UTF-8 bytes (a bundle line's, read where they are).
    public init?(utf8 text: some Sequence<UInt8>) {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok: Bool = withUnsafeMutableBytes(of: &bytes) { out in
            var utf8 = text.makeIterator()
            var n = 0, pos = 0
            @inline(__always) func nibble(_ c: UInt8) -> UInt8? {
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
                default: return nil
                }
            }
            while n < 16 {
                if pos == 8 || pos == 13 || pos == 18 || pos == 23 {
                    guard utf8.next() == UInt8(ascii: "-") else { return false }
                    pos += 1
                    continue
                }
                guard let a = utf8.next().flatMap(nibble), let b = utf8.next().flatMap(nibble) else { return false }
                out[n] = a << 4 | b
                n += 1; pos += 2
            }
            return utf8.next() == nil
        }
        guard ok else { return nil }
        self.init(uuid: bytes)
    }
}
