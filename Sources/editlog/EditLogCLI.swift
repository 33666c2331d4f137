import ArgumentParser
import EditLog
import EditLogSync
import Foundation

@main
struct EditLogCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "editlog",
        abstract: "An event-sourced, tamper-evident edit log for field data collected against ArcGIS feature services.",
        discussion: """
            Exit codes: 0 ok; 64 usage; 65 invalid input; 66 rejected by a rule; 67 conflict; 68 not found;
            69 corrupt or tampered log; 70 unsupported (e.g. a newer log); 74 I/O.
            """,
        subcommands: [Init.self, Record.self, Query.self, Show.self, Log.self, History.self, Blame.self, Diff.self, Sessions.self,
                      Replay.self, Export.self, CheckpointCommand.self, Report.self, Rebuild.self, Verify.self, BundleCommand.self, ConflictsCommand.self, KeysCommand.self, UsersCommand.self, ReplicasCommand.self, SchemaCommand.self, Serve.self, Sync.self, HubCommand.self, Demo.self]
    )

    static func main() async {
        ProcessMemory.keepLargeAllocationsMapped()
        await main(SchemaCommand.logFirst(ReplicasCommand.logFirst(ConflictsCommand.logFirst(Array(CommandLine.arguments.dropFirst())))))
    }
}

/// Maps EditLog errors to a message on stderr and an exit code.
func handleErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let e as EditLogError {
        throw reported(e)
    }
}

/// `handleErrors` for the async commands (`init`, `sync`, `serve`, `demo`).
func handleErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let e as EditLogError {
        throw reported(e)
    }
}

/// Prints `e` on stderr; the exit code of its kind, to throw.
private func reported(_ e: EditLogError) -> ExitCode {
    FileHandle.standardError.write(Data("editlog: error: \(e.description)\n".utf8))
    return ExitCode(exitCode(e.kind))
}

func exitCode(_ kind: EditLogError.Kind) -> Int32 {
    switch kind {
    case .invalidInput: return 65
    case .validation: return 66
    case .conflict: return 67
    case .notFound: return 68
    case .corrupt: return 69
    case .unsupported: return 70
    case .io: return 74
    case .unavailable: return 75
    }
}

func out(_ s: String) {
    FileHandle.standardOutput.write(Data((s + "\n").utf8))
}

/// Options every command that opens a log shares.
struct LogOptions: ParsableArguments {
    @Argument(help: "The log file (SQLite), or a hub store: postgres://USER@HOST[:PORT]/DATABASE.")
    var db: String

    @Option(name: .customLong("cache"), help: ArgumentHelp(
        "For a postgres:// store: the directory of its local replica, caught up before the command runs (default: $XDG_CACHE_HOME/editlog, else ~/.cache/editlog).",
        valueName: "dir"))
    var cache: String?
}

struct JSONFlag: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}

/// `--by`'s values are the clock's cases: the help lists them, and ArgumentParser refuses any other (64).
extension EventClock: ExpressibleByArgument {}

/// The clock every audit command filters and prints by (`--by`); one default, documented in the README.
struct ClockOption: ParsableArguments {
    @Option(name: .customLong("by"), help: ArgumentHelp(
        "Which clock times are read and printed by: client (the field device's time, or the recording time when the client gave none) or recorded (when this log stored the event).",
        valueName: "clock"))
    var clock: EventClock = .default
}

/// A moment given on the command line: a position, or an ISO-8601 time with a zone.
func auditPoint(_ s: String, _ what: String) throws -> LogMoment {
    guard let p = LogMoment(s) else { throw ValidationError("\(what) \"\(s)\" is neither a position nor an ISO-8601 time with a zone (or a date, taken as 00:00 UTC)") }
    return p
}

/// A value as people read it: a date field as ISO-8601, a relationship key as the related record's display
/// field (the species' common name, not its GlobalID).
func displayValue(_ field: String, _ v: JSONValue, layer: LayerSchema, log: EditLog, width: Int = 24) -> String {
    if layer.field(field)?.type == .date { return fieldText(v, layer.field(field), width) }
    let keys = Set(layer.relationships.filter { $0.role == .destination }.compactMap { $0.keyField?.lowercased() })
    // The related record's display value has one home (`EditLog.displayValue(of:)`, which the report reads too); a key
    // that names no record (or is no GlobalID) shows as it is.
    if keys.contains(field.lowercased()), let g = v.stringValue, let name = (try? log.displayValue(of: g)) ?? nil {
        return short(.string(name), width)
    }
    return short(v, width)
}

/// A progress bar on a terminal's stderr; silent otherwise.
struct ProgressBar {
    let label: String
    let enabled = isatty(2) == 1
    func update(_ done: Int64, _ total: Int64) {
        guard enabled, total > 0 else { return }
        let width = 30
        let filled = Int(Double(done) / Double(total) * Double(width))
        let bar = String(repeating: "#", count: min(width, filled)) + String(repeating: " ", count: max(0, width - filled))
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)\u{1B}[K".utf8))
    }
    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

/// Renders rows as an aligned text table.
func table(_ header: [String], _ rows: [[String]]) -> String {
    var widths = header.map(\.count)
    for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }.joined(separator: "  ")
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}

/// A field's value in a text output: a date field (Esri epoch milliseconds) in `Timestamp.human`'s form, the rest `short`.
func fieldText(_ v: JSONValue, _ field: FieldSchema?, _ max: Int = 40) -> String {
    if field?.type == .date, let ms = v.intValue { return Timestamp.human(milliseconds: ms) }
    return short(v, max)
}

func short(_ v: JSONValue, _ max: Int = 40) -> String {
    let s: String
    if case .string(let t) = v { s = t } else { s = v.serialized() }
    return s.count > max ? String(s.prefix(max - 1)) + "…" : s
}

/// Options of the commands that talk to a FeatureServer with a token.
struct TokenOptions: ParsableArguments {
    @Option(name: .long, help: "The token sent with every request (`token=`).")
    var token: String?

    @Option(name: .customLong("token-file"), help: "A file whose first non-empty line is the token (keeps it out of the process list).")
    var tokenFile: String?

    @Option(name: .long, help: ArgumentHelp("Log in as this user, as ArcGIS's field apps do: the password is read from stdin (its first line) or asked for without echo on a terminal, never from the command line; the service's token service (rest/info) gives the token, and a new one when it expires.", valueName: "name"))
    var user: String?

    func validate() throws {
        if token != nil && tokenFile != nil { throw ValidationError("--token and --token-file are exclusive: give one") }
        if user != nil && (token != nil || tokenFile != nil) {
            throw ValidationError("--user logs in for a token: give it without --token or --token-file")
        }
        if let user, user.isEmpty || user.contains(where: \.isWhitespace) { throw ValidationError("--user needs a user name (no white space)") }
    }

    /// Whether any way of authorising requests was given.
    var given: Bool { token != nil || tokenFile != nil || user != nil }

    /// The client of the service at `url`, with the token given or, with `--user`, logging in with the
    /// password read now (from stdin or a no-echo prompt).
    func client(url: String) throws(EditLogError) -> FeatureServiceClient {
        guard let user else { return try FeatureServiceClient(url: url, token: try resolved()) }
        let host = URL(string: url)?.host ?? url
        let password = try PasswordInput.read(prompt: "Password for \(user) at \(host): ")
        return try FeatureServiceClient(url: url, user: user, password: password)
    }

    /// The token given, read from its file where one was named.
    func resolved() throws(EditLogError) -> String? {
        guard let tokenFile else { return token }
        guard let data = FileManager.default.contents(atPath: tokenFile) else { throw EditLogError(.notFound, "cannot read the token file", at: tokenFile) }
        guard let tok = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }).first(where: { !$0.isEmpty }) else {
            throw EditLogError(.invalidInput, "the token file is empty", at: tokenFile)
        }
        return tok
    }
}
