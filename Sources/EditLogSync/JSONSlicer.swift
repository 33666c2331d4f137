import EditLog

/// A large JSON answer read a part at a time: the byte ranges of an object's members and of an array's elements,
/// each part then parsed (and checked) by `JSONParser` on its own, so no tree of the whole answer is ever built.
/// The slicer checks the structure between the parts (brackets, commas, colons, strings closed); a malformed
/// answer is refused as `json` refuses one.
struct JSONSlicer {
    let bytes: [UInt8]
    let url: String

    func malformed(_ at: Int) -> EditLogError {
        EditLogError(.invalidInput, "the answer is not a FeatureServer's JSON (byte \(at)): \(String(decoding: bytes.prefix(120), as: UTF8.self))", at: url)
    }

    func skipWhitespace(_ i: inout Int) {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    /// The end (exclusive) of the string whose opening quote is at `i`.
    func stringEnd(_ start: Int) throws(EditLogError) -> Int {
        var i = start + 1
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        throw malformed(start)
    }

    /// The end (exclusive) of the value that starts at `start`.
    func valueEnd(_ start: Int) throws(EditLogError) -> Int {
        guard start < bytes.count else { throw malformed(start) }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return try stringEnd(start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var closing: [UInt8] = []
            var i = start
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""): i = try stringEnd(i); continue
                case UInt8(ascii: "{"): closing.append(UInt8(ascii: "}"))
                case UInt8(ascii: "["): closing.append(UInt8(ascii: "]"))
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard closing.popLast() == bytes[i] else { throw malformed(i) }
                    if closing.isEmpty { return i + 1 }
                default: break
                }
                i += 1
            }
            throw malformed(start)
        default:
            var i = start
            while i < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
            guard i > start else { throw malformed(start) }
            return i
        }
    }

    /// The whole answer's range (whitespace around it left out).
    func document() throws(EditLogError) -> Range<Int> {
        var i = 0
        skipWhitespace(&i)
        let end = try valueEnd(i)
        var j = end
        skipWhitespace(&j)
        guard j == bytes.count else { throw malformed(j) }
        return i..<end
    }

    /// The members of the object at `range`, in order (nil when it is not an object).
    func members(_ range: Range<Int>) throws(EditLogError) -> [(key: String, value: Range<Int>)]? {
        guard bytes[range.lowerBound] == UInt8(ascii: "{") else { return nil }
        var out: [(key: String, value: Range<Int>)] = []
        try parts(range, close: UInt8(ascii: "}")) { i throws(EditLogError) in
            guard bytes[i] == UInt8(ascii: "\"") else { throw malformed(i) }
            let keyEnd = try stringEnd(i)
            guard case .string(let key)? = try? JSONParser.parse(bytes[i..<keyEnd]) else { throw malformed(i) }
            var j = keyEnd
            skipWhitespace(&j)
            guard j < range.upperBound, bytes[j] == UInt8(ascii: ":") else { throw malformed(j) }
            j += 1
            skipWhitespace(&j)
            let end = try valueEnd(j)
            out.append((key, j..<end))
            return end
        }
        return out
    }

    /// The elements of the array at `range`, in order (nil when it is not an array).
    func elements(_ range: Range<Int>) throws(EditLogError) -> [Range<Int>]? {
        guard bytes[range.lowerBound] == UInt8(ascii: "[") else { return nil }
        var out: [Range<Int>] = []
        try parts(range, close: UInt8(ascii: "]")) { i throws(EditLogError) in
            let end = try valueEnd(i)
            out.append(i..<end)
            return end
        }
        return out
    }

    /// The value at `range`, parsed.
    func value(_ range: Range<Int>) throws(EditLogError) -> JSONValue {
        do { return try JSONParser.parse(bytes[range]) } catch { throw malformed(range.lowerBound + error.offset) }
    }

    /// Walks the comma-separated parts of the object or array at `range`: `part` reads one from its first byte
    /// and returns where it ends.
    private func parts(_ range: Range<Int>, close: UInt8, _ part: (Int) throws(EditLogError) -> Int) throws(EditLogError) {
        var i = range.lowerBound + 1
        skipWhitespace(&i)
        if i < range.upperBound, bytes[i] == close { return }
        while true {
            i = try part(i)
            skipWhitespace(&i)
            guard i < range.upperBound else { throw malformed(i) }
            if bytes[i] == close { return }
            guard bytes[i] == UInt8(ascii: ",") else { throw malformed(i) }
            i += 1
            skipWhitespace(&i)
        }
    }
}
