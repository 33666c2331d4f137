import EditLog
import Foundation
import Synchronization

/// How `editlog serve` runs.
public struct ServerOptions: Sendable {
    /// The service name in `/arcgis/rest/services/<name>/FeatureServer`.
    public var serviceName: String
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// token → user. Empty: nobody can edit.
    public var tokens: [String: String] = [:]
    /// Reads (definitions, queries, attachments) without a token.
    public var anonymousReads: Bool = false
    /// The most features one query returns (a layer's `maxRecordCount`).
    public var maxRecordCount: Int = 1000
    /// The largest request body accepted (413 beyond).
    public var maxRequestBytes: Int = 16 << 20
    /// Requests per second allowed per client (user, else remote address); nil: no limit.
    public var rateLimit: Double?
    /// Reader connections of the reads' `DatabasePool` (`EditLogReaders`): reads running at once; others wait for one.
    public var readers: Int = 4
    /// Requests of each class admitted at once, running or waiting (reads; edits, which one writer takes in turn):
    /// one more is answered ArcGIS's 503 with `Retry-After` at once instead of waiting without bound.
    public var maxQueuedReads: Int = 256
    public var maxQueuedEdits: Int = 64
    /// Where writes go when the log is a hub node's local copy (a node of a hub on PostgreSQL: `EditLogHub.HubNode`); nil:
    /// the log itself.
    public var writer: (any LogWriter)?
    /// The `serviceItemId` the service root names (a hub's nodes name the hub's log id: one service, many URLs).
    public var serviceItemId: String?
    /// Change tracking (`extractChanges`, `changeTrackingInfo`). false: served as an ArcGIS Server service published
    /// with Sync but without change tracking, whose clients take changes through replicas (`serve --no-change-tracking`).
    public var changeTracking: Bool = true
    /// Logging in with a name and a password (`generateToken`); nil: only the tokens above.
    public var login: Login?
    /// Replayed moments `historicMoment` queries keep (scratch files beside the log, by position, least recently used out).
    public var historicMoments: Int = 4
    /// The clock a `historicMoment` is read on (as `replay --as-of TIME --by`).
    public var historicClock: EventClock = .client
    /// The time tokens are issued and checked at (injected by tests).
    public var clock: @Sendable () -> Date = { Date() }
    /// What the writer loop committed (`LogHandles.submit`), for `serve`'s last line.
    public let groupCommits = GroupCommits()

    public init(serviceName: String) { self.serviceName = serviceName }

    /// The default service name: the log file's base name without its extension.
    public static func defaultServiceName(forLogAt path: String) -> String {
        let base = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let cleaned = String(base.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-" ? Character($0) : "_" })
        return cleaned.isEmpty ? "EditLog" : cleaned
    }
}

/// The writer loop's groups: how many committed, and the requests in them (`LogHandles.submit`).
public final class GroupCommits: Sendable {
    private let counts = Mutex<(groups: Int, requests: Int, largest: Int)>((0, 0, 0))

    public init() {}

    func committed(requests: Int) {
        counts.withLock { $0 = ($0.groups + 1, $0.requests + requests, max($0.largest, requests)) }
    }

    /// `{"groups", "requests", "largest"}`: groups committed, the requests they answered, the most in one.
    public var figures: JSONValue {
        let c = counts.withLock { $0 }
        return ["groups": .int(Int64(c.groups)), "requests": .int(Int64(c.requests)), "largest": .int(Int64(c.largest))]
    }
}

/// The token file: one `TOKEN USER` pair per line; blank lines and lines starting with `#` are ignored.
public enum TokenFile {
    public static func parse(_ text: String) throws(EditLogError) -> [String: String] {
        var tokens: [String: String] = [:]
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2 else { throw EditLogError(.invalidInput, "expected \"TOKEN USER\"", at: "token file line \(n + 1)") }
            let token = String(parts[0]), user = String(parts[1])
            guard token.count >= 8 else { throw EditLogError(.invalidInput, "a token must be at least 8 characters", at: "token file line \(n + 1)") }
            guard user.count <= 256 else { throw EditLogError(.invalidInput, "a user must be at most 256 characters", at: "token file line \(n + 1)") }
            guard tokens[token] == nil else { throw EditLogError(.invalidInput, "a token is listed twice", at: "token file line \(n + 1)") }
            tokens[token] = user
        }
        return tokens
    }
}
