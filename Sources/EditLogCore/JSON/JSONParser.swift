/// A strict JSON parser (RFC 8259) over UTF-8 bytes.
///
/// Hand-written rather than `JSONSerialization`/`JSONDecoder` because the log decodes
/// every payload on replay (speed matters), because errors must name the byte offset,
/// and because NaN, Infinity, invalid UTF-8 and nesting bombs must be rejected, never crash.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

public enum JSONParser {
    public static let maxDepth = 512

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer) }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes))
    }

    public static func parse(_ string: String) throws(JSONParseError) -> JSONValue {
        var s = string
        let result: Result<JSONValue, JSONParseError> = s.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer) }
        }
        return try result.get()
    }

    public static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var p = Parser(bytes: buffer)
        return try p.parseDocument()
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    var depth = 0
    /// Members of the objects being parsed, innermost last (`parseObject`).
    var members: [(key: String, value: JSONValue, offset: Int)] = []

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // Skip a UTF-8 byte order mark.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { i = 3 }
        skipWhitespace()
        let v = try parseValue()
        skipWhitespace()
        if i != bytes.count { throw fail("unexpected data after the JSON value") }
        return v
    }

    @inline(__always) mutating func skipWhitespace() {
        while i < bytes.count {
            let c = bytes[i]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 } else { break }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "N"): throw fail("NaN is not a JSON number")
        case UInt8(ascii: "I"): throw fail("Infinity is not a JSON number")
        default: throw fail("unexpected character '\(Unicode.Scalar(bytes[i]))'")
        }
    }

    mutating func expectLiteral(_ lit: StaticString) throws(JSONParseError) {
        let n = lit.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw fail("unexpected end of input") }
        let p = lit.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
        i += 1
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; depth -= 1; return .object([:]) }
        // Members go to a stack shared by every nesting level first, so the dictionary is made once at its final
        // size: inserting into an empty one regrew and rehashed it at 1, 3, 6, 12… members.
        let first = members.count
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let keyOffset = i
            let key = try parseString()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after key") }
            i += 1
            skipWhitespace()
            let v = try parseValue()
            members.append((key, v, keyOffset))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input in object") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw fail("expected ',' or '}' in object")
        }
        var dict = [String: JSONValue](minimumCapacity: members.count - first)
        for k in first..<members.count {
            let (key, v, keyOffset) = members[k]
            if dict.updateValue(v, forKey: key) != nil {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
        }
        members.removeSubrange(first...)
        depth -= 1
        return .object(dict)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
        i += 1
        var arr: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; depth -= 1; return .array(arr) }
        while true {
            skipWhitespace()
            arr.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input in array") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw fail("expected ',' or ']' in array")
        }
        depth -= 1
        return .array(arr)
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = i
        var isInteger = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count else { throw fail("unexpected end of input in number") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else if bytes[i] >= UInt8(ascii: "1") && bytes[i] <= UInt8(ascii: "9") {
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        } else {
            if bytes[i] == UInt8(ascii: "I") { throw fail("-Infinity is not a JSON number") }
            throw fail("invalid number")
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            let digits = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            if i == digits { throw fail("expected digits after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let digits = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            if i == digits { throw fail("expected digits in exponent") }
        }
        if isInteger, i - start <= 18 {
            // Up to 18 digits (and a sign) cannot overflow: read without making a String.
            var v: Int64 = 0
            let negative = bytes[start] == UInt8(ascii: "-")
            for k in (negative ? start + 1 : start)..<i { v = v &* 10 &+ Int64(bytes[k] &- UInt8(ascii: "0")) }
            return .int(negative ? -v : v)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if isInteger {
            // An integer literal is kept exact or refused: silently widening it to a Double would
            // round it (9007199254740993 and up lose digits) and change its type on the way.
            guard let v = Int64(text) else {
                let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
                throw JSONParseError(offset: start, reason: "integer \(shown) does not fit in 64 bits; write it as a string or a decimal")
            }
            return .int(v)
        }
        guard let d = Double(text), d.isFinite else {
            throw JSONParseError(offset: start, reason: "number \(text.prefix(40)) is out of range")
        }
        return .double(d)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        i += 1  // opening quote
        let start = i
        // Fast path: no escapes. An all-ASCII string (the common case) is valid UTF-8 by construction and is made
        // without `String(validating:)`, whose generic validation looked up type metadata on every call.
        var high: UInt8 = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<i])
                i += 1
                if high < 0x80 { return String(decoding: slice, as: UTF8.self) }
                guard let s = String(validating: slice, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            high |= c
            i += 1
        }
        var out = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                guard let s = String(validating: out, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return s
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { break }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("invalid low surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw fail("unpaired surrogate in \\u escape")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw JSONParseError(offset: start - 1, reason: "unterminated string")
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit in \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }
}

/// Reads one JSON object whose layout the caller knows in advance (a bundle's event line: keys in a fixed order, no
/// whitespace), value by value, without building the object: each method reads one piece where the cursor is and
/// moves past it, or answers nil (and the cursor is then of no further use). Values are parsed by the same code as
/// `JSONParser.parse`, so a value read here is the value a parse of the whole document holds; a caller that gets nil
/// parses the document instead, for its errors. Nested values count the enclosing object in their depth.
public struct JSONCursor {
    private var p: Parser

    /// A cursor at the start of `buffer`, which must outlive it.
    public init(buffer: UnsafeBufferPointer<UInt8>) {
        p = Parser(bytes: buffer)
        p.depth = 1
    }

    /// Whether every byte was read.
    public var atEnd: Bool { p.i == p.bytes.count }

    /// Moves past `text` if the bytes there are exactly it.
    public mutating func skip(_ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount
        guard p.i + n <= p.bytes.count else { return false }
        let t = text.utf8Start
        for k in 0..<n where p.bytes[p.i + k] != t[k] { return false }
        p.i += n
        return true
    }

    /// A JSON string.
    public mutating func string() -> String? {
        guard p.i < p.bytes.count, p.bytes[p.i] == UInt8(ascii: "\"") else { return nil }
        return try? p.parseString()
    }

    /// A JSON string or null (`.some(nil)`).
    public mutating func optionalString() -> String?? {
        if skip("null") { return .some(nil) }
        return string().map { .some($0) }
    }

    /// The bytes of a JSON string that holds no escape and no control character (hex digits, a UUID), as they are.
    public mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
        guard p.i < p.bytes.count, p.bytes[p.i] == UInt8(ascii: "\"") else { return nil }
        var k = p.i + 1
        while k < p.bytes.count {
            let c = p.bytes[k]
            if c == UInt8(ascii: "\"") {
                defer { p.i = k + 1 }
                return UnsafeBufferPointer(rebasing: p.bytes[(p.i + 1)..<k])
            }
            if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
            k += 1
        }
        return nil
    }

    /// A JSON number that is an integer (as `JSONValue.int`).
    public mutating func int() -> Int64? {
        guard p.i < p.bytes.count, p.bytes[p.i] == UInt8(ascii: "-") || (p.bytes[p.i] >= UInt8(ascii: "0") && p.bytes[p.i] <= UInt8(ascii: "9")),
              case .int(let v)? = try? p.parseNumber() else { return nil }
        return v
    }

    /// Any JSON value, with the range of bytes it was read from.
    public mutating func value() -> (JSONValue, Range<Int>)? {
        let start = p.i
        guard let v = try? p.parseValue() else { return nil }
        return (v, start..<p.i)
    }
}
