import EditLogCore
import Foundation

/// Reading the files a user hands to EditLog, with errors that name the file.
public enum InputFiles {
    public static let maxJSONBytes = 512 << 20

    public static func bytes(_ path: String) throws(EditLogError) -> [UInt8] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { throw EditLogError(.notFound, "no such file", at: path) }
        guard !isDir.boolValue else { throw EditLogError(.invalidInput, "is a directory, not a file", at: path) }
        guard let d = FileManager.default.contents(atPath: path) else { throw EditLogError(.io, "cannot read the file", at: path) }
        return [UInt8](d)
    }

    public static func json(_ path: String) throws(EditLogError) -> JSONValue {
        let b = try bytes(path)
        guard b.count <= maxJSONBytes else { throw EditLogError(.invalidInput, "file is \(b.count) bytes; the limit is \(maxJSONBytes)", at: path) }
        do { return try JSONParser.parse(b) } catch { throw EditLogError(.invalidInput, error.description, at: path) }
    }

    /// A rules file with each geocoder `"table"` file (relative to the rules file) inlined as `"addresses"`.
    public static func rules(_ path: String) throws(EditLogError) -> JSONValue {
        let json = try json(path)
        guard case .object(var root) = json, case .array(var rules)? = root["rules"] else { return json }
        let dir = (path as NSString).deletingLastPathComponent
        for i in rules.indices {
            guard case .object(var rule) = rules[i], case .object(var g)? = rule["geocoder"], let table = g["table"]?.stringValue else { continue }
            let tablePath = table.hasPrefix("/") ? table : (dir as NSString).appendingPathComponent(table)
            let t = try InputFiles.json(tablePath)
            guard let addresses = t["addresses"] ?? (t.arrayValue.map { JSONValue.array($0) }) else {
                throw EditLogError(.invalidInput, "expected {\"addresses\": [...]}", at: tablePath)
            }
            g["addresses"] = addresses
            g["table"] = nil
            rule["geocoder"] = .object(g)
            rules[i] = .object(rule)
        }
        root["rules"] = .array(rules)
        return .object(root)
    }

    /// SHA-256 of a file's bytes, hex.
    public static func sha256(_ bytes: [UInt8]) -> String { Hex.encode(EventHash.sha256(bytes)) }
}
