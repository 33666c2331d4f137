import EditLog
import Foundation

/// A recursive-descent parser for the `where` subset ArcGIS documents (SQL-92):
///
///     expr      := and ("OR" and)*
///     and       := not ("AND" not)*
///     not       := "NOT" not | "(" expr ")" | predicate
///     predicate := operand ( compOp operand
///                          | ["NOT"] "BETWEEN" operand "AND" operand
///                          | ["NOT"] "IN" "(" operand ("," operand)* ")"
///                          | ["NOT"] "LIKE" operand ["ESCAPE" string]
///                          | "IS" ["NOT"] "NULL" )
///     operand   := field | ["-"] number | string | "NULL" | "DATE" string | "TIMESTAMP" string
///                | ("UPPER" | "LOWER") "(" operand ")"
///
/// It yields a `FeaturePredicate`; the facade compiles that to SQL with bound parameters and the schema's
/// column names. Nothing of the text is ever pasted into SQL.
public struct WhereParser {
    public static let maxDepth = 64

    var tokens: [(token: WhereToken, offset: Int)]
    var index = 0
    var depth = 0
    let end: Int

    /// Parses a clause; nil for an empty one (no filter).
    public static func parse(_ text: String) throws(WhereSyntaxError) -> FeaturePredicate? {
        let tokens = try WhereTokenizer.tokenize(text)
        if tokens.isEmpty { return nil }
        var p = WhereParser(tokens: tokens, end: text.unicodeScalars.count)
        let e = try p.expression()
        if p.index < p.tokens.count { throw p.error("unexpected \(p.describe(p.tokens[p.index].token))") }
        return e
    }

    var current: WhereToken? { index < tokens.count ? tokens[index].token : nil }

    func error(_ message: String) -> WhereSyntaxError {
        WhereSyntaxError(message: message, offset: index < tokens.count ? tokens[index].offset : end)
    }

    func describe(_ t: WhereToken) -> String {
        switch t {
        case .identifier(let s): return "name \"\(s.prefix(40))\""
        case .keyword(let k): return k
        case .integer(let n): return "number \(n)"
        case .decimal(let d): return "number \(d)"
        case .string: return "a string"
        case .op(let o): return "\"\(o)\""
        case .leftParen: return "\"(\""
        case .rightParen: return "\")\""
        case .comma: return "\",\""
        case .minus: return "\"-\""
        }
    }

    mutating func accept(keyword k: String) -> Bool {
        if current == .keyword(k) { index += 1; return true }
        return false
    }

    mutating func expect(keyword k: String) throws(WhereSyntaxError) {
        guard accept(keyword: k) else { throw error("expected \(k)\(current.map { ", found " + describe($0) } ?? " at the end")") }
    }

    mutating func expect(_ t: WhereToken, _ what: String) throws(WhereSyntaxError) {
        guard current == t else { throw error("expected \(what)\(current.map { ", found " + describe($0) } ?? " at the end")") }
        index += 1
    }

    mutating func nest() throws(WhereSyntaxError) {
        depth += 1
        if depth > Self.maxDepth { throw error("the where clause nests deeper than \(Self.maxDepth)") }
    }

    mutating func expression() throws(WhereSyntaxError) -> FeaturePredicate {
        try nest(); defer { depth -= 1 }
        var left = try conjunction()
        while accept(keyword: "OR") { left = .or(left, try conjunction()) }
        return left
    }

    mutating func conjunction() throws(WhereSyntaxError) -> FeaturePredicate {
        var left = try negation()
        while accept(keyword: "AND") { left = .and(left, try negation()) }
        return left
    }

    mutating func negation() throws(WhereSyntaxError) -> FeaturePredicate {
        if accept(keyword: "NOT") {
            try nest(); defer { depth -= 1 }
            return .not(try negation())
        }
        if current == .leftParen {
            index += 1
            let e = try expression()
            try expect(.rightParen, "\")\"")
            return e
        }
        return try predicate()
    }

    mutating func predicate() throws(WhereSyntaxError) -> FeaturePredicate {
        let left = try operand()
        guard let t = current else { throw error("expected a comparison at the end") }
        switch t {
        case .op(let o):
            index += 1
            guard let op = FeaturePredicate.ComparisonOperator(rawValue: o) else { throw error("unknown operator \(o)") }
            return .compare(left, op, try operand())
        case .keyword("IS"):
            index += 1
            let negated = accept(keyword: "NOT")
            try expect(keyword: "NULL")
            return .isNull(left, negated: negated)
        case .keyword("NOT"), .keyword("BETWEEN"), .keyword("IN"), .keyword("LIKE"):
            let negated = accept(keyword: "NOT")
            if accept(keyword: "BETWEEN") {
                let lo = try operand()
                try expect(keyword: "AND")
                return .between(left, low: lo, high: try operand(), negated: negated)
            }
            if accept(keyword: "IN") {
                try expect(.leftParen, "\"(\" after IN")
                var items = [try operand()]
                while current == .comma { index += 1; items.append(try operand()) }
                try expect(.rightParen, "\")\" closing IN")
                return .inList(left, items, negated: negated)
            }
            if accept(keyword: "LIKE") {
                let pattern = try operand()
                var escape: String?
                if accept(keyword: "ESCAPE") {
                    guard case .string(let e)? = current, e.count == 1 else { throw error("ESCAPE takes a one-character string") }
                    index += 1; escape = e
                }
                return .like(left, pattern: pattern, escape: escape, negated: negated)
            }
            throw error("expected BETWEEN, IN or LIKE after NOT")
        default:
            throw error("expected a comparison, found \(describe(t))")
        }
    }

    mutating func operand() throws(WhereSyntaxError) -> FeatureOperand {
        guard let t = current else { throw error("expected a value or a field at the end") }
        index += 1
        switch t {
        case .identifier(let name): return .field(name)
        case .integer(let n): return .value(.int(n))
        case .decimal(let d): return .value(.double(d))
        case .string(let s): return .value(.string(s))
        case .minus:
            switch current {
            case .integer(let n)?: index += 1; return .value(n == Int64.min ? .double(-Double(n)) : .int(-n))
            case .decimal(let d)?: index += 1; return .value(.double(-d))
            default: throw error("expected a number after \"-\"")
            }
        case .keyword("NULL"): return .value(.null)
        case .keyword("DATE"), .keyword("TIMESTAMP"):
            guard case .string(let s)? = current else { throw error("expected a quoted date after \(t == .keyword("DATE") ? "DATE" : "TIMESTAMP")") }
            index += 1
            guard let ms = Self.dateMilliseconds(s) else { throw error("\"\(s.prefix(40))\" is not a date (YYYY-MM-DD[ HH:MM:SS])") }
            return .value(.int(ms))
        case .keyword("UPPER"), .keyword("LOWER"):
            try nest(); defer { depth -= 1 }
            try expect(.leftParen, "\"(\"")
            let inner = try operand()
            try expect(.rightParen, "\")\"")
            return t == .keyword("UPPER") ? .upper(inner) : .lower(inner)
        default:
            index -= 1
            throw error("expected a value or a field, found \(describe(t))")
        }
    }

    /// `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS[.fff]` (UTC, as ArcGIS reads date literals) as epoch milliseconds.
    static func dateMilliseconds(_ s: String) -> Int64? {
        let t = s.trimmingCharacters(in: .whitespaces)
        if t.count == 10 { return Timestamp.parse(t) }
        let iso = t.replacingOccurrences(of: " ", with: "T")
        return Timestamp.parse(iso) ?? Timestamp.parse(iso + "Z")
    }
}
