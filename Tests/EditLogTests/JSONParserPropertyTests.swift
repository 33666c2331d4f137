import EditLog
import Foundation
import Testing

/// The parser against values it did not make: random documents (nested objects and arrays, integers of every
/// length up to the 64-bit bounds, strings with escapes, random whitespace) written by hand here, parsed back to
/// the value that was written, and read the same way by Foundation's `JSONSerialization`.
@Suite struct JSONParserPropertyTests {
    typealias Random = SplitMix64

    static let keyAlphabet = Array("abcdeéZ_\"\\\n/ 0")

    func whitespace(_ r: inout Random) -> String { ["", " ", "\n", "\t ", "\r\n  "][r.below(5)] }

    func integer(_ r: inout Random) -> Int64 {
        switch r.below(5) {
        case 0: return Int64.max - Int64(r.below(3))
        case 1: return Int64.min + Int64(r.below(3))
        default:
            // Every length from 1 to 19 digits, either sign (the reader has a path for up to 18 characters).
            let digits = 1 + r.below(19)
            var v: Int64 = Int64(1 + r.below(9))
            for _ in 1..<digits { v = v.multipliedReportingOverflow(by: 10).partialValue &+ Int64(r.below(10)) }
            v = v < 0 ? -(v / 2) : v
            return r.below(2) == 0 ? v : -v
        }
    }

    func string(_ r: inout Random) -> String {
        String((0..<r.below(6)).map { _ in Self.keyAlphabet[r.below(Self.keyAlphabet.count)] })
    }

    func literal(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "/": out += "\\/"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// A random value and its text.
    func document(_ r: inout Random, depth: Int) -> (JSONValue, String) {
        switch depth > 3 ? 2 + r.below(3) : r.below(6) {
        case 0:
            var keys = Set<String>()
            var pairs: [(String, JSONValue, String)] = []
            for _ in 0..<r.below(9) {
                let k = string(&r)
                guard keys.insert(k).inserted else { continue }
                let (v, t) = document(&r, depth: depth + 1)
                pairs.append((k, v, t))
            }
            let text = "{" + pairs.map { whitespace(&r) + literal($0.0) + whitespace(&r) + ":" + whitespace(&r) + $0.2 }.joined(separator: ",") + whitespace(&r) + "}"
            return (.object(Dictionary(uniqueKeysWithValues: pairs.map { ($0.0, $0.1) })), text)
        case 1:
            let items = (0..<r.below(5)).map { _ in document(&r, depth: depth + 1) }
            return (.array(items.map(\.0)), "[" + items.map { whitespace(&r) + $0.1 }.joined(separator: ",") + "]")
        case 2:
            let v = integer(&r)
            return (.int(v), String(v))
        case 3:
            let s = string(&r)
            return (.string(s), literal(s))
        default:
            switch r.below(3) {
            case 0: return (.null, "null")
            case 1: let b = r.below(2) == 0; return (.bool(b), b ? "true" : "false")
            default: let d = Double(r.below(2000)) / 8 + 0.5; return (.double(d), String(d))
            }
        }
    }

    /// Foundation's reading of a document, in the parser's terms (integers as `Int64`, fractions as `Double`).
    func foundation(_ any: Any) -> JSONValue? {
        switch any {
        case is NSNull: return .null
        case let s as String: return .string(s)
        case let a as [Any]:
            var out: [JSONValue] = []
            for x in a { guard let v = foundation(x) else { return nil }; out.append(v) }
            return .array(out)
        case let d as [String: Any]:
            var out: [String: JSONValue] = [:]
            for (k, x) in d { guard let v = foundation(x) else { return nil }; out[k] = v }
            return .object(out)
        case let n as NSNumber:
            let type = String(cString: n.objCType)
            if type == "c" || type == "B" { return .bool(n.boolValue) }
            if type == "d" || type == "f" {
                // Foundation on Linux reads some integers near the 64-bit bounds as rounded Doubles: not comparable.
                return abs(n.doubleValue) >= 9_007_199_254_740_992 ? nil : .double(n.doubleValue)
            }
            return .int(n.int64Value)
        default: return nil
        }
    }

    @Test func randomDocumentsParseToTheValueWrittenAndAsFoundationReadsThem() throws {
        var r = SplitMix64(seed: 20261123)
        var compared = 0
        for _ in 0..<3_000 {
            let (value, text) = document(&r, depth: 0)
            let parsed = try JSONParser.parse(whitespace(&r) + text + whitespace(&r))
            #expect(parsed == value, "\(text)")
            if let any = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]), let f = foundation(any) {
                #expect(parsed == f, "\(text)")
                compared += 1
            }
        }
        #expect(compared > 2_000)
    }

    @Test func aDuplicateKeyIsFoundAtItsLevelOnly() throws {
        #expect(try JSONParser.parse(#"{"a":{"b":1},"b":{"a":2,"b":[{"a":3}]}}"#)
                == .object(["a": .object(["b": .int(1)]), "b": .object(["a": .int(2), "b": .array([.object(["a": .int(3)])])])]))
        for (text, offset) in [(#"{"a":{"b":1,"b":2}}"#, 12), (#"{"a":[{"x":1},{"x":2,"x":3}],"z":0}"#, 21), (#"{"a":1,"b":{},"a":2}"#, 14)] {
            do {
                _ = try JSONParser.parse(text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.offset == offset, "\(text)")
                #expect(error.reason.hasPrefix("duplicate key"), "\(text)")
            }
        }
        // A document refused half-way leaves nothing behind for the next one.
        #expect(try JSONParser.parse(#"{"k":{"k":{"k":1}}}"#) == .object(["k": .object(["k": .object(["k": .int(1)])])]))
    }
}

extension SplitMix64 {
    /// A draw in 0..<n.
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
