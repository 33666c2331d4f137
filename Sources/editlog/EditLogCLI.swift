import ArgumentParser
import EditLog
import Foundation

@main
struct EditLogCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "editlog",
        abstract: "An event-sourced, tamper-evident edit log for field data collected against ArcGIS feature services.",
        discussion: """
            Exit codes: 0 ok; 64 usage; 65 invalid input; 66 rejected by a rule; 67 conflict; 68 not found;
            69 corrupt or tampered log; 70 unsupported (e.g. a newer log); 74 I/O.
            """,
        subcommands: [Init.self, Record.self, Query.self, Show.self, Log.self, History.self, Sessions.self, Rebuild.self, Verify.self,
                      Replay.self, Export.self, CheckpointCommand.self, Demo.self]
    )
}

/// Maps EditLog errors to a message on stderr and an exit code.
func handleErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let e as EditLogError {
        FileHandle.standardError.write(Data("editlog: error: \(e.description)\n".utf8))
        throw ExitCode(exitCode(e.kind))
    }
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
    }
}

func out(_ s: String) {
    FileHandle.standardOutput.write(Data((s + "\n").utf8))
}

/// Options every command that opens a log shares.
struct LogOptions: ParsableArguments {
    @Argument(help: "The log file (SQLite).")
    var db: String
}

struct JSONFlag: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}

/// A progress bar on a terminal's stderr; silent otherwise.
struct ProgressBar {
    let label: String
    let enabled = isatty(2) == 1
    func update(_ done: Int64, _ total: Int64) {
        guard enabled, total > 0 else { return }
        let width = 30
        let filled = Int(Double(done) / Double(total) * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: max(0, width - filled))
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)".utf8))
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

func short(_ v: JSONValue, _ max: Int = 40) -> String {
    let s: String
    if case .string(let t) = v { s = t } else { s = v.serialized() }
    return s.count > max ? String(s.prefix(max - 1)) + "…" : s
}
