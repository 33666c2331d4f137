import EditLogCore
import Foundation
import PostgresNIO

/// A hub store's address, `postgres://[user[:password]@]host[:port]/database`, and its credentials. The password
/// comes from the URL, else `PGPASSWORD`, else the pgpass file (`PGPASSFILE`, else `~/.pgpass`), as libpq reads
/// them, so it never has to be on a command line. Printed, the location never shows the password.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String

    /// Whether `text` names a PostgreSQL store rather than a log file.
    public static func isPostgres(_ text: String) -> Bool {
        let l = text.lowercased()
        return l.hasPrefix("postgres://") || l.hasPrefix("postgresql://")
    }

    /// Parses a `postgres://` URL; `environment` and `home` stand in for the process's (tests).
    public init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                home: String = NSHomeDirectory()) throws(EditLogError) {
        guard Self.isPostgres(text), let url = URLComponents(string: text), let host = url.host, !host.isEmpty else {
            throw EditLogError(.invalidInput, "not a PostgreSQL URL: \(Self.redacted(text)); write postgres://USER@HOST[:PORT]/DATABASE")
        }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw EditLogError(.invalidInput, "the PostgreSQL URL \(Self.redacted(text)) names no database; write postgres://USER@HOST[:PORT]/DATABASE")
        }
        self.host = host
        self.port = url.port ?? Int(environment["PGPORT"] ?? "") ?? 5432
        self.user = url.user?.removingPercentEncoding ?? environment["PGUSER"] ?? environment["USER"] ?? "postgres"
        self.database = database
        if let p = url.password { password = p.removingPercentEncoding ?? p }
        else if let p = environment["PGPASSWORD"] { password = p }
        else { password = Self.pgpass(path: environment["PGPASSFILE"] ?? home + "/.pgpass", host: host, port: port, database: database, user: user) }
    }

    /// The first matching line of a pgpass file (`host:port:database:user:password`, `*` matching anything, `\:` and
    /// `\\` escaped). libpq ignores a file others can read; so does this.
    static func pgpass(path: String, host: String, port: Int, database: String, user: String) -> String? {
        guard let attrs = try? FileManager.default.attributesOfItem(atPath: path),
              let mode = (attrs[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 == 0,
              let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            var fields: [String] = [], cur = "", escaped = false
            for c in line {
                if escaped { cur.append(c); escaped = false } else if c == "\\" { escaped = true } else if c == ":" { fields.append(cur); cur = "" } else { cur.append(c) }
            }
            fields.append(cur)
            guard fields.count == 5 else { continue }
            let want = [host, String(port), database, user]
            if zip(fields.prefix(4), want).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// `text` with any password in it replaced by `***` (for error messages).
    public static func redacted(_ text: String) -> String {
        guard var url = URLComponents(string: text), url.password != nil else { return text }
        url.password = "***"
        return url.string ?? text
    }

    /// One connection of its own (a probe, a LISTEN session), outside the client's pool.
    var connectionConfiguration: PostgresConnection.Configuration {
        .init(host: host, port: port, username: user, password: password, database: database, tls: .disable)
    }

    var configuration: PostgresClient.Configuration {
        var c = PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: .disable)
        c.options.minimumConnections = 0
        c.options.maximumConnections = 4
        return c
    }
}
