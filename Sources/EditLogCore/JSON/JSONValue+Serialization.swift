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
            var first = true
            for (key, value) in o.sorted(by: { JSONValue.keyOrder($0.key, $1.key) }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Keys in the order of their UTF-8 bytes (memcmp on the strings' contiguous storage).
    @inline(__always)
    static func keyOrder(_ a: String, _ b: String) -> Bool {
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
        out.append(UInt8(ascii: "\""))
        // Runs of bytes that need no escaping are copied at once.
        var start = 0
        for (i, c) in utf8.enumerated() where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
            escape(c, to: &out)
            start = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        out.append(UInt8(ascii: "\""))
    }

    static func escape(_ c: UInt8, to out: inout [UInt8]) {
        switch c {
        case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
        case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
        }
    }

}

extension JSONValue: CustomStringConvertible {
    public var description: String { serialized() }
}
