import EditLog
import Foundation

/// A request's parameters: the query string and, for a POST, a form-urlencoded or multipart/form-data body.
/// Names are case-insensitive (as ArcGIS's are); a name given twice keeps the last value; the body wins
/// over the query string. Empty values count as absent, as on ArcGIS.
public struct Parameters: Sendable {
    public private(set) var values: [String: String] = [:]
    /// multipart parts that carried a file (name → bytes, filename, content type).
    public private(set) var files: [String: (bytes: [UInt8], filename: String, contentType: String)] = [:]

    public init() {}

    public init(query: String?) { if let query { merge(form: query) } }

    public subscript(_ name: String) -> String? {
        // Blank means whitespace only; the check stops at the first other character (a list of 1,000
        // objectIds is not trimmed on every read).
        guard let v = values[name.lowercased()], !v.unicodeScalars.allSatisfy(\.properties.isWhitespace) else { return nil }
        return v
    }

    public mutating func set(_ name: String, _ value: String) { values[name.lowercased()] = value }

    public mutating func merge(form: String) {
        for pair in form.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let k = Self.decode(kv[0]), v = kv.count > 1 ? Self.decode(kv[1]) : ""
            if !k.isEmpty { values[k.lowercased()] = v }
        }
    }

    /// `+` as a space, then `%XX` escapes; a malformed escape or bytes that are not UTF-8 leave the escapes
    /// as they are (as `removingPercentEncoding` failing would). Byte by byte: Foundation's decoding was slow
    /// for a long list of objectIds.
    static func decode(_ s: Substring) -> String {
        var s = s
        return s.withUTF8 { b -> String in
            guard b.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return String(decoding: b, as: UTF8.self) }
            var plus: [UInt8] = []
            plus.reserveCapacity(b.count)
            var out: [UInt8] = []
            out.reserveCapacity(b.count)
            var valid = true
            var i = 0
            while i < b.count {
                let c = b[i] == UInt8(ascii: "+") ? UInt8(ascii: " ") : b[i]
                plus.append(c)
                if c == UInt8(ascii: "%"), valid {
                    if i + 2 < b.count, let hi = hex(b[i + 1]), let lo = hex(b[i + 2]) {
                        out.append(hi << 4 | lo)
                        plus.append(b[i + 1]); plus.append(b[i + 2])
                        i += 3
                        continue
                    }
                    valid = false
                }
                out.append(c)
                i += 1
            }
            if valid, let decoded = String(validating: out, as: UTF8.self) { return decoded }
            return String(decoding: plus, as: UTF8.self)
        }
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    public func bool(_ name: String, default d: Bool) -> Bool {
        guard let v = self[name]?.lowercased() else { return d }
        return v == "true" || v == "1" || v == "yes"
    }

    /// Parses a multipart/form-data body (RFC 7578).
    public mutating func merge(multipart body: [UInt8], boundary: String) throws(ParameterError) {
        let delimiter = Array(("--" + boundary).utf8)
        var parts: [ArraySlice<UInt8>] = []
        var positions: [Int] = []
        var i = 0
        while let p = Self.find(delimiter, in: body, from: i) { positions.append(p); i = p + delimiter.count }
        guard positions.count >= 2 else { throw ParameterError("the multipart body has no parts for boundary \(boundary.prefix(70))") }
        for k in 0..<(positions.count - 1) {
            var start = positions[k] + delimiter.count
            if start + 1 < body.count, body[start] == 0x0D, body[start + 1] == 0x0A { start += 2 }
            var end = positions[k + 1]
            if end >= 2, body[end - 2] == 0x0D, body[end - 1] == 0x0A { end -= 2 }
            if start <= end { parts.append(body[start..<end]) }
        }
        for part in parts {
            guard let sep = Self.find(Array("\r\n\r\n".utf8), in: Array(part), from: 0) else { continue }
            let headerBytes = Array(part)[0..<sep]
            let content = Array(Array(part)[(sep + 4)...])
            let headers = String(decoding: headerBytes, as: UTF8.self).components(separatedBy: "\r\n")
            var name: String?, filename: String?, contentType = "application/octet-stream"
            for h in headers {
                let lower = h.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    name = Self.headerParameter("name", in: h)
                    filename = Self.headerParameter("filename", in: h)
                } else if lower.hasPrefix("content-type:") {
                    contentType = String(h.dropFirst("content-type:".count)).trimmingCharacters(in: .whitespaces)
                }
            }
            guard let name else { continue }
            if let filename {
                files[name.lowercased()] = (content, filename, contentType)
            } else {
                values[name.lowercased()] = String(decoding: content, as: UTF8.self)
            }
        }
    }

    static func headerParameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";") {
            let t = piece.trimmingCharacters(in: .whitespaces)
            guard t.lowercased().hasPrefix(key + "=") else { continue }
            var v = Substring(t.dropFirst(key.count + 1))
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = v.dropFirst().dropLast() }
            return String(v)
        }
        return nil
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, hay.count >= needle.count, from <= hay.count - needle.count else { return nil }
        var i = from
        let first = needle[0]
        while i <= hay.count - needle.count {
            if hay[i] == first, Array(hay[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }
}

public struct ParameterError: Error, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}
