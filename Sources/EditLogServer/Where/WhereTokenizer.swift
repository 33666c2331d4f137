import EditLog

/// A `where` clause that cannot be read. The service answers it with ArcGIS's query error.
public struct WhereSyntaxError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) (at character \(offset + 1))" }
}

/// One token of the SQL-92 subset ArcGIS documents for `where`.
public enum WhereToken: Equatable, Sendable {
    case identifier(String)
    case keyword(String)        // upper-cased: AND OR NOT IN BETWEEN LIKE IS NULL ESCAPE DATE TIMESTAMP UPPER LOWER
    case integer(Int64)
    case decimal(Double)
    case string(String)
    case op(String)             // = <> != < <= > >=
    case leftParen, rightParen, comma, minus
}

/// Splits a `where` clause into tokens. Anything outside the subset (a `;`, a comment, a double-quoted or
/// bracketed identifier, an unterminated string) is an error here, before any parsing.
public enum WhereTokenizer {
    public static let keywords: Set<String> = ["AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "IS", "NULL", "ESCAPE", "DATE", "TIMESTAMP", "UPPER", "LOWER"]
    public static let maxLength = 65_536

    public static func tokenize(_ text: String) throws(WhereSyntaxError) -> [(token: WhereToken, offset: Int)] {
        let s = Array(text.unicodeScalars)
        guard s.count <= maxLength else { throw WhereSyntaxError(message: "the where clause is longer than \(maxLength) characters", offset: 0) }
        var out: [(WhereToken, Int)] = []
        var i = 0
        func isIdentStart(_ c: Unicode.Scalar) -> Bool { c == "_" || c.properties.isAlphabetic }
        func isIdent(_ c: Unicode.Scalar) -> Bool { isIdentStart(c) || ("0"..."9").contains(c) }
        while i < s.count {
            let c = s[i]
            let start = i
            if c.properties.isWhitespace { i += 1; continue }
            switch c {
            case "(": out.append((.leftParen, i)); i += 1
            case ")": out.append((.rightParen, i)); i += 1
            case ",": out.append((.comma, i)); i += 1
            case "=": out.append((.op("="), i)); i += 1
            case "<":
                if i + 1 < s.count, s[i + 1] == ">" || s[i + 1] == "=" { out.append((.op("<" + String(s[i + 1])), i)); i += 2 } else { out.append((.op("<"), i)); i += 1 }
            case ">":
                if i + 1 < s.count, s[i + 1] == "=" { out.append((.op(">="), i)); i += 2 } else { out.append((.op(">"), i)); i += 1 }
            case "!":
                guard i + 1 < s.count, s[i + 1] == "=" else { throw WhereSyntaxError(message: "unexpected \"!\"", offset: i) }
                out.append((.op("<>"), i)); i += 2
            case "-":
                if i + 1 < s.count, s[i + 1] == "-" { throw WhereSyntaxError(message: "comments are not allowed", offset: i) }
                out.append((.minus, i)); i += 1
            case "/" where i + 1 < s.count && s[i + 1] == "*":
                throw WhereSyntaxError(message: "comments are not allowed", offset: i)
            case "'":
                var v = String.UnicodeScalarView()
                i += 1
                var closed = false
                while i < s.count {
                    if s[i] == "'" {
                        if i + 1 < s.count, s[i + 1] == "'" { v.append("'"); i += 2; continue }
                        closed = true; i += 1; break
                    }
                    v.append(s[i]); i += 1
                }
                guard closed else { throw WhereSyntaxError(message: "unterminated string", offset: start) }
                out.append((.string(String(v)), start))
            case "0"..."9", ".":
                var t = ""
                var sawDot = false, sawExp = false
                while i < s.count {
                    let d = s[i]
                    if ("0"..."9").contains(d) { t.unicodeScalars.append(d); i += 1 }
                    else if d == ".", !sawDot, !sawExp { sawDot = true; t += "."; i += 1 }
                    else if d == "e" || d == "E", !sawExp, !t.isEmpty {
                        sawExp = true; t += "e"; i += 1
                        if i < s.count, s[i] == "+" || s[i] == "-" { t.unicodeScalars.append(s[i]); i += 1 }
                    } else { break }
                }
                if i < s.count, isIdentStart(s[i]) { throw WhereSyntaxError(message: "a number runs into a name", offset: start) }
                if !sawDot && !sawExp, let n = Int64(t) { out.append((.integer(n), start)) }
                else if let d = Double(t), d.isFinite { out.append((.decimal(d), start)) }
                else { throw WhereSyntaxError(message: "\"\(t)\" is not a number", offset: start) }
            default:
                guard isIdentStart(c) else {
                    throw WhereSyntaxError(message: "unexpected character \"\(Character(c))\"", offset: i)
                }
                var t = ""
                while i < s.count, isIdent(s[i]) { t.unicodeScalars.append(s[i]); i += 1 }
                let upper = t.uppercased()
                out.append((keywords.contains(upper) ? .keyword(upper) : .identifier(t), start))
            }
        }
        return out
    }
}
