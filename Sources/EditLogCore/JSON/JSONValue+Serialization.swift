import Foundation

extension JSONValue {
    /// Canonical compact JSON: object keys sorted by their UTF-8 bytes, no whitespace,
    /// integers as integers, doubles in Swift's shortest round-trip form.
    public func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return out
    }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): JSONValue.writeInt(i, to: &out)
        case .double(let d): JSONValue.writeDouble(d, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (k, v) in a.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            // The members' indices in key order (no copy of the members; small objects by insertion sort).
            var order = ContiguousArray(o.indices)
            if order.count > 16 {
                order.sort { JSONValue.keyOrder(o[$0].key, o[$1].key) }
            } else if order.count > 1 {
                for i in 1..<order.count {
                    let x = order[i], key = o[x].key
                    var j = i
                    while j > 0, JSONValue.keyOrder(key, o[order[j - 1]].key) { order[j] = order[j - 1]; j -= 1 }
                    order[j] = x
                }
            }
            for (n, i) in order.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(o[i].key, to: &out)
                out.append(UInt8(ascii: ":"))
                o[i].value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Keys in the order of their UTF-8 bytes (memcmp on the strings' contiguous storage): the order an object's
    /// members are written in.
    @inline(__always)
    public static func keyOrder(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                let n = min(pa.count, pb.count)
                let c = n == 0 ? 0 : memcmp(pa.baseAddress!, pb.baseAddress!, n)
                return c != 0 ? c < 0 : pa.count < pb.count
            }
        }
    }

    /// The decimal digits of `i`, without a `String` in between.
    public static func writeInt(_ i: Int64, to out: inout [UInt8]) {
        if i < 0 { out.append(UInt8(ascii: "-")) }
        var v = i.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var n = 0
            repeat {
                digits[19 - n] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v % 10)
                v /= 10
                n += 1
            } while v > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[(20 - n)...]))
        }
    }

    public static func writeDouble(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else { out.append(contentsOf: "null".utf8); return }
        if d.rounded() == d && abs(d) < 1e15 {
            // Whole numbers keep a ".0"-free integer form only when they were integers;
            // a double stays a double so that the value round-trips with its type.
            writeInt(Int64(d), to: &out)
            out.append(contentsOf: ".0".utf8)
            return
        }
        out.append(contentsOf: "\(d)".utf8)
    }

    public static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(utf8: $0, to: &out) }
    }

    /// A JSON string of UTF-8 bytes (valid UTF-8, as SQLite's text of a projection column is), escaped as
    /// `writeString(_:to:)` escapes a `String`.
    public static func writeString(utf8: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxStringBytes(utf8Count: utf8.count)) { buffer in
            let n = writeString(utf8: UnsafeRawBufferPointer(utf8), into: buffer.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// The most bytes `writeString(utf8:into:)` writes for `n` bytes of text: every byte as `\u00XX`, and the quotes.
    @inlinable public static func maxStringBytes(utf8Count n: Int) -> Int { 6 * n + 2 }

    /// Writes the JSON string of `utf8` (quotes included) at `out`, which has room for `maxStringBytes(utf8Count:)`;
    /// returns the bytes written. `"`, `\`, `\n`, `\r` and `\t` get their short escapes, the other control characters
    /// `\u00XX`; every other byte is copied. Eight bytes at a time while none of them needs an escape, then byte by
    /// byte through a table (a branch per byte and an append per run showed in a bundle export's profile).
    public static func writeString(utf8: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) -> Int {
        var j = 0
        out[j] = 0x22
        j += 1
        if let source = utf8.baseAddress {
            let n = utf8.count
            var i = 0
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            escapes.withUnsafeBufferPointer { table in
                while i < n {
                    if i + 8 <= n {
                        let v = source.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                        let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5C)
                        // Whether any byte is below 0x20, or is zero after the xor (exact for "any").
                        let below = (v &- ones &* 0x20) & ~v
                        let isQuote = (quote &- ones) & ~quote
                        let isBackslash = (backslash &- ones) & ~backslash
                        if (below | isQuote | isBackslash) & highs == 0 {
                            UnsafeMutableRawPointer(out + j).storeBytes(of: v, as: UInt64.self)
                            i += 8
                            j += 8
                            continue
                        }
                    }
                    let c = source.load(fromByteOffset: i, as: UInt8.self)
                    i += 1
                    let e = table[Int(c)]
                    if e == 0 {
                        out[j] = c
                        j += 1
                    } else if e != UInt8(ascii: "u") {
                        out[j] = 0x5C
                        out[j + 1] = e
                        j += 2
                    } else {
                        out[j] = 0x5C
                        out[j + 1] = e
                        out[j + 2] = 0x30
                        out[j + 3] = 0x30
                        Hex.write(c, to: out + j + 4)
                        j += 6
                    }
                }
            }
        }
        out[j] = 0x22
        return j + 1
    }

    /// For each byte, 0 when a JSON string holds it as it is, else the character after the backslash of its escape
    /// (`"`, `\`, `n`, `r`, `t`), or `u` for `\u00XX` (the other control characters).
    static let escapes: [UInt8] = (0..<256).map { (b: Int) -> UInt8 in
        switch b {
        case 0x22: return 0x22
        case 0x5C: return 0x5C
        case 0x0A: return UInt8(ascii: "n")
        case 0x0D: return UInt8(ascii: "r")
        case 0x09: return UInt8(ascii: "t")
        case 0..<0x20: return UInt8(ascii: "u")
        default: return 0
        }
    }

}

extension JSONValue: CustomStringConvertible {
    public var description: String { serialized() }
}
