import EditLog
import Foundation

/// The users who can log in (`generateToken`): one `NAME HASH` line each (`PasswordHash`); blank lines and lines
/// starting with `#` are ignored. `editlog users add|remove|list` keep it; the file is written whole, mode 0600.
public struct UsersFile: Sendable, Equatable {
    public private(set) var users: [(name: String, hash: PasswordHash)] = []

    public init() {}

    public static func == (a: UsersFile, b: UsersFile) -> Bool {
        a.users.count == b.users.count && zip(a.users, b.users).allSatisfy { $0.name == $1.name && $0.hash == $1.hash }
    }

    public func hash(of name: String) -> PasswordHash? { users.first { $0.name == name }?.hash }

    /// Adds `name`, or gives it a new hash when it is there. Returns whether it was new.
    @discardableResult
    public mutating func set(_ name: String, _ hash: PasswordHash) throws(EditLogError) -> Bool {
        try Self.checkName(name, at: "user name")
        if let i = users.firstIndex(where: { $0.name == name }) { users[i].hash = hash; return false }
        users.append((name, hash))
        return true
    }

    /// Removes `name`; whether it was there.
    public mutating func remove(_ name: String) -> Bool {
        guard let i = users.firstIndex(where: { $0.name == name }) else { return false }
        users.remove(at: i)
        return true
    }

    /// A name is 1 to 256 characters, none of them white space or a control character (the file splits on spaces).
    public static func checkName(_ name: String, at place: String) throws(EditLogError) {
        guard !name.isEmpty, name.count <= 256 else { throw EditLogError(.invalidInput, "a user name must be 1 to 256 characters", at: place) }
        guard !name.unicodeScalars.contains(where: { CharacterSet.whitespacesAndNewlines.contains($0) || CharacterSet.controlCharacters.contains($0) }) else {
            throw EditLogError(.invalidInput, "a user name must not contain white space or control characters", at: place)
        }
    }

    public static func parse(_ text: String, path: String) throws(EditLogError) -> UsersFile {
        var file = UsersFile()
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let place = "\(path) line \(n + 1)"
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2 else { throw EditLogError(.invalidInput, "expected \"NAME HASH\"", at: place) }
            let name = String(parts[0])
            try checkName(name, at: place)
            guard file.hash(of: name) == nil else { throw EditLogError(.invalidInput, "user \"\(name)\" is listed twice", at: place) }
            file.users.append((name, try PasswordHash(parsing: parts[1], where: place)))
        }
        return file
    }

    public var text: String {
        "# editlog users: NAME \(PasswordHash.scheme)$ROUNDS$SALT$KEY (PBKDF2-HMAC-SHA256, base64)\n"
            + users.map { "\($0.name) \($0.hash.text)\n" }.joined()
    }

    /// The file at `path`; an empty one where `missingIsEmpty` and there is no file.
    public static func load(_ path: String, missingIsEmpty: Bool = false) throws(EditLogError) -> UsersFile {
        guard FileManager.default.fileExists(atPath: path) else {
            if missingIsEmpty { return UsersFile() }
            throw EditLogError(.notFound, "there is no users file (create one with `editlog users add FILE NAME`)", at: path)
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw EditLogError(.io, "cannot read the users file", at: path) }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    /// Writes the file whole (a temporary file renamed over it), readable by its owner only.
    public func write(to path: String) throws(EditLogError) {
        let temp = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        guard FileManager.default.createFile(atPath: temp, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw EditLogError(.io, "cannot write the users file", at: temp)
        }
        guard rename(temp, path) == 0 else {
            unlink(temp)
            throw EditLogError(.io, "cannot replace the users file: \(String(cString: strerror(errno)))", at: path)
        }
    }
}
