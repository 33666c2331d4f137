import EditLogCore
import Foundation

/// A small, strict JSON Schema (draft 2020-12) validator over `JSONValue`, for the schemas in `schemas/`.
///
/// It supports exactly the keywords those schemas use and throws `SchemaError` on any other keyword
/// (or a malformed one, a `$ref` it cannot resolve, `then`/`else` without `if`), so a schema can never
/// be silently half-checked. Every document is checked whole when it is first loaded, `$ref` targets included.
///
/// `$ref` may point into the same document (`#/$defs/x`) or at a file relative to the referring file
/// (`other.schema.json`, `../defs.schema.json#/$defs/x`). `$id` is not supported: it would change how
/// relative references resolve.
final class JSONSchemaValidator {
    struct SchemaError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static let draft = "https://json-schema.org/draft/2020-12/schema"

    static let supportedKeywords: Set<String> = [
        "$schema", "$defs", "$ref", "$comment", "title", "description",
        "type", "enum", "const",
        "properties", "required", "additionalProperties", "minProperties",
        "items", "minItems", "maxItems",
        "pattern", "minLength", "maxLength",
        "minimum",
        "allOf", "anyOf", "oneOf", "if", "then", "else",
    ]

    static let typeNames: Set<String> = ["null", "boolean", "integer", "number", "string", "array", "object"]

    let baseDirectory: String
    private var documents: [String: JSONValue] = [:]
    private var regexes: [String: NSRegularExpression] = [:]

    init(baseDirectory: String) {
        self.baseDirectory = (baseDirectory as NSString).standardizingPath
    }

    // MARK: Loading and checking schemas

    func absolute(_ path: String, relativeTo dir: String? = nil) -> String {
        if path.hasPrefix("/") { return (path as NSString).standardizingPath }
        return ((dir ?? baseDirectory) as NSString).appendingPathComponent(path).nsStandardized
    }

    /// Loads, parses and checks a schema file (and everything it references). Returns its absolute path.
    @discardableResult
    func load(_ path: String) throws(SchemaError) -> String {
        let abs = absolute(path)
        if documents[abs] != nil { return abs }
        guard let data = FileManager.default.contents(atPath: abs) else { throw SchemaError("cannot read schema \(abs)") }
        let doc: JSONValue
        do { doc = try JSONParser.parse([UInt8](data)) } catch { throw SchemaError("\(abs): \(error)") }
        try register(doc, at: abs)
        return abs
    }

    /// Registers an in-memory schema as if it were the file `name` in the base directory.
    @discardableResult
    func register(_ doc: JSONValue, name: String) throws(SchemaError) -> String {
        let abs = absolute(name)
        documents[abs] = nil
        try register(doc, at: abs)
        return abs
    }

    private func register(_ doc: JSONValue, at abs: String) throws(SchemaError) {
        // Registered before the check so that reference cycles between documents terminate.
        documents[abs] = doc
        do throws(SchemaError) {
            if case .object(let o) = doc, let s = o["$schema"], s != .string(Self.draft) {
                throw SchemaError("\(abs): \"$schema\" must be \"\(Self.draft)\", found \(s.serialized())")
            }
            try checkSchema(doc, doc: abs, pointer: "", isRoot: true)
        } catch {
            documents[abs] = nil
            throw error
        }
    }

    private func checkSchema(_ schema: JSONValue, doc: String, pointer: String, isRoot: Bool = false) throws(SchemaError) {
        let here = "\(doc)#\(pointer)"
        func fail(_ msg: String) -> SchemaError { SchemaError("\(here): \(msg)") }
        if case .bool = schema { return }
        guard case .object(let o) = schema else { throw fail("a schema must be an object or a boolean, found \(schema.typeName)") }
        for (k, v) in o.sorted(by: { $0.key < $1.key }) {
            let at = "\(pointer)/\(Self.escape(k))"
            guard Self.supportedKeywords.contains(k) else {
                throw fail("unsupported keyword \"\(k)\" (the validator supports \(Self.supportedKeywords.sorted().joined(separator: ", ")))")
            }
            switch k {
            case "$schema":
                guard isRoot else { throw fail("\"$schema\" is allowed only at the root of a document") }
            case "title", "description", "$comment", "pattern":
                guard case .string(let s) = v else { throw fail("\"\(k)\" must be a string") }
                if k == "pattern" { _ = try regex(s, at: here) }
            case "$ref":
                guard case .string(let r) = v else { throw fail("\"$ref\" must be a string") }
                _ = try resolve(r, from: doc)
            case "$defs", "properties":
                guard case .object(let m) = v else { throw fail("\"\(k)\" must be an object") }
                for (name, sub) in m.sorted(by: { $0.key < $1.key }) { try checkSchema(sub, doc: doc, pointer: "\(at)/\(Self.escape(name))") }
            case "additionalProperties", "items", "if", "then", "else":
                try checkSchema(v, doc: doc, pointer: at)
            case "allOf", "anyOf", "oneOf":
                guard case .array(let list) = v, !list.isEmpty else { throw fail("\"\(k)\" must be a non-empty array") }
                for (i, sub) in list.enumerated() { try checkSchema(sub, doc: doc, pointer: "\(at)/\(i)") }
            case "type":
                let names: [JSONValue]
                if case .array(let a) = v { names = a } else { names = [v] }
                guard !names.isEmpty else { throw fail("\"type\" must not be empty") }
                for n in names {
                    guard case .string(let s) = n, Self.typeNames.contains(s) else { throw fail("unknown type \(n.serialized())") }
                }
            case "required":
                guard case .array(let a) = v, a.allSatisfy({ $0.stringValue != nil }) else { throw fail("\"required\" must be an array of strings") }
            case "enum":
                guard case .array(let a) = v, !a.isEmpty else { throw fail("\"enum\" must be a non-empty array") }
            case "const":
                break
            case "minLength", "maxLength", "minItems", "maxItems", "minProperties":
                guard let n = v.intValue, n >= 0 else { throw fail("\"\(k)\" must be a non-negative integer") }
            case "minimum":
                guard v.doubleValue != nil else { throw fail("\"minimum\" must be a number") }
            default:
                throw fail("keyword \"\(k)\" is listed as supported but not checked")
            }
        }
        if (o["then"] != nil || o["else"] != nil) && o["if"] == nil {
            throw fail("\"then\"/\"else\" without \"if\" would be ignored")
        }
    }

    private func regex(_ pattern: String, at location: String) throws(SchemaError) -> NSRegularExpression {
        if let r = regexes[pattern] { return r }
        do {
            let r = try NSRegularExpression(pattern: pattern)
            regexes[pattern] = r
            return r
        } catch {
            throw SchemaError("\(location): invalid pattern \(pattern): \(error)")
        }
    }

    /// A `$ref` to its document and subschema.
    private func resolve(_ ref: String, from doc: String) throws(SchemaError) -> (doc: String, schema: JSONValue) {
        let parts = ref.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let file = String(parts[0])
        let fragment = parts.count > 1 ? String(parts[1]) : ""
        let target: String
        if file.isEmpty {
            target = doc
        } else {
            guard !file.contains(":") else { throw SchemaError("\(doc): $ref \"\(ref)\": only relative file references are supported") }
            target = try load(absolute(file, relativeTo: (doc as NSString).deletingLastPathComponent))
        }
        guard var node = documents[target] else { throw SchemaError("\(doc): $ref \"\(ref)\": no document \(target)") }
        if fragment.isEmpty { return (target, node) }
        guard fragment.hasPrefix("/") else { throw SchemaError("\(doc): $ref \"\(ref)\": only JSON pointer fragments are supported") }
        for token in fragment.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch node {
            case .object(let o):
                guard let next = o[key] else { throw SchemaError("\(doc): $ref \"\(ref)\" does not resolve (no \"\(key)\")") }
                node = next
            case .array(let a):
                guard let i = Int(key), a.indices.contains(i) else { throw SchemaError("\(doc): $ref \"\(ref)\" does not resolve (index \(key))") }
                node = a[i]
            default:
                throw SchemaError("\(doc): $ref \"\(ref)\" does not resolve")
            }
        }
        return (target, node)
    }

    static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    // MARK: Validation

    /// Validates an instance against a schema file; returns the problems, each starting with a JSON path (`$.a.b[0]`).
    func validate(_ instance: JSONValue, against path: String) throws(SchemaError) -> [String] {
        let doc = try load(path)
        var errors: [String] = []
        try check(instance, documents[doc]!, doc: doc, path: "$", into: &errors)
        return errors
    }

    /// Validates an instance against an in-memory schema (its relative `$ref`s resolve from the base directory).
    func validate(_ instance: JSONValue, schema: JSONValue, name: String = "inline.schema.json") throws(SchemaError) -> [String] {
        let doc = try register(schema, name: name)
        var errors: [String] = []
        try check(instance, schema, doc: doc, path: "$", into: &errors)
        return errors
    }

    static func child(_ path: String, _ key: String) -> String {
        let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "$" }
            && key.unicodeScalars.allSatisfy(\.isASCII)
        return plain ? "\(path).\(key)" : "\(path)[\(JSONValue.string(key).serialized())]"
    }

    static func matches(_ v: JSONValue, type: String) -> Bool {
        switch (type, v) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): return true
        case ("number", .int), ("number", .double), ("integer", .int): return true
        case ("integer", .double(let d)): return d.isFinite && d.rounded() == d
        default: return false
        }
    }

    /// JSON equality: numbers compare by value (1 == 1.0), objects ignore key order.
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.int, .double), (.double, .int), (.double, .double): return a.doubleValue == b.doubleValue
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { equal(v, $0) } ?? false }
        default: return a == b
        }
    }

    static func describe(_ v: JSONValue) -> String {
        let s = v.serialized()
        return s.count > 60 ? String(s.prefix(57)) + "..." : s
    }

    private func isValid(_ v: JSONValue, _ schema: JSONValue, doc: String, path: String) throws(SchemaError) -> [String] {
        var errors: [String] = []
        try check(v, schema, doc: doc, path: path, into: &errors)
        return errors
    }

    private func check(_ v: JSONValue, _ schema: JSONValue, doc: String, path: String, into errors: inout [String]) throws(SchemaError) {
        switch schema {
        case .bool(true): return
        case .bool(false): errors.append("\(path): not allowed here"); return
        case .object: break
        default: throw SchemaError("\(doc): a schema must be an object or a boolean")
        }
        guard case .object(let s) = schema else { return }
        for k in s.keys where !Self.supportedKeywords.contains(k) {
            throw SchemaError("\(doc): unsupported keyword \"\(k)\"")
        }

        if case .string(let r)? = s["$ref"] {
            let (target, sub) = try resolve(r, from: doc)
            try check(v, sub, doc: target, path: path, into: &errors)
        }
        if let t = s["type"] {
            let names = (t.arrayValue ?? [t]).compactMap(\.stringValue)
            if !names.contains(where: { Self.matches(v, type: $0) }) {
                errors.append("\(path): expected \(names.joined(separator: " or ")), found \(v.typeName) \(Self.describe(v))")
            }
        }
        if case .array(let options)? = s["enum"], !options.contains(where: { Self.equal($0, v) }) {
            errors.append("\(path): \(Self.describe(v)) is not one of \(options.map { $0.serialized() }.joined(separator: ", "))")
        }
        if let c = s["const"], !Self.equal(c, v) {
            errors.append("\(path): expected \(c.serialized()), found \(Self.describe(v))")
        }

        switch v {
        case .string(let str):
            let length = str.unicodeScalars.count
            if let n = s["minLength"]?.intValue, length < n { errors.append("\(path): \(length) characters, fewer than \(n)") }
            if let n = s["maxLength"]?.intValue, length > n { errors.append("\(path): \(length) characters, more than \(n)") }
            if case .string(let p)? = s["pattern"] {
                let re = try regex(p, at: doc)
                if re.firstMatch(in: str, range: NSRange(str.startIndex..., in: str)) == nil {
                    errors.append("\(path): \(Self.describe(v)) does not match \(p)")
                }
            }
        case .int, .double:
            if let m = s["minimum"]?.doubleValue, let d = v.doubleValue, d < m {
                errors.append("\(path): \(Self.describe(v)) is less than \(s["minimum"]!.serialized())")
            }
        case .object(let o):
            if case .array(let req)? = s["required"] {
                for case .string(let k) in req where o[k] == nil { errors.append("\(path): missing \"\(k)\"") }
            }
            if let n = s["minProperties"]?.intValue, o.count < n { errors.append("\(path): \(o.count) properties, fewer than \(n)") }
            let props = s["properties"]?.objectValue ?? [:]
            for k in o.keys.sorted() {
                if let sub = props[k] {
                    try check(o[k]!, sub, doc: doc, path: Self.child(path, k), into: &errors)
                } else if let ap = s["additionalProperties"] {
                    if ap == .bool(false) {
                        errors.append("\(path): unknown key \"\(k)\"")
                    } else {
                        try check(o[k]!, ap, doc: doc, path: Self.child(path, k), into: &errors)
                    }
                }
            }
        case .array(let a):
            if let n = s["minItems"]?.intValue, a.count < n { errors.append("\(path): \(a.count) items, fewer than \(n)") }
            if let n = s["maxItems"]?.intValue, a.count > n { errors.append("\(path): \(a.count) items, more than \(n)") }
            if let items = s["items"] {
                for (i, e) in a.enumerated() { try check(e, items, doc: doc, path: "\(path)[\(i)]", into: &errors) }
            }
        default:
            break
        }

        if case .array(let list)? = s["allOf"] {
            for sub in list { try check(v, sub, doc: doc, path: path, into: &errors) }
        }
        if case .array(let list)? = s["anyOf"] {
            var failures: [[String]] = []
            for sub in list {
                let e = try isValid(v, sub, doc: doc, path: path)
                if e.isEmpty { failures = []; break }
                failures.append(e)
            }
            if !failures.isEmpty {
                errors.append("\(path): matches none of anyOf: " + Self.summarize(failures))
            }
        }
        if case .array(let list)? = s["oneOf"] {
            var passed: [Int] = []
            var failures: [[String]] = []
            for (i, sub) in list.enumerated() {
                let e = try isValid(v, sub, doc: doc, path: path)
                if e.isEmpty { passed.append(i) } else { failures.append(e) }
            }
            if passed.isEmpty {
                errors.append("\(path): matches none of oneOf: " + Self.summarize(failures))
            } else if passed.count > 1 {
                errors.append("\(path): matches oneOf alternatives \(passed.map(String.init).joined(separator: ", ")); expected exactly one")
            }
        }
        if let cond = s["if"] {
            let holds = try isValid(v, cond, doc: doc, path: path).isEmpty
            if holds, let t = s["then"] { try check(v, t, doc: doc, path: path, into: &errors) }
            if !holds, let e = s["else"] { try check(v, e, doc: doc, path: path, into: &errors) }
        }
    }

    static func summarize(_ failures: [[String]]) -> String {
        failures.enumerated().map { i, e in "[\(i)] " + e.joined(separator: "; ") }.joined(separator: " | ")
    }
}

private extension String {
    var nsStandardized: String { (self as NSString).standardizingPath }
}
