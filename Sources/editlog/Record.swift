import ArgumentParser
import EditLog
import Foundation

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply an NDJSON edit script atomically (schemas/script-line.schema.json).",
        discussion: "A rejected line stops the script with `line N: reason`, a non-zero exit, and nothing of the file written. A script already recorded (same SHA-256) is a no-op.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The script: one JSON object per line.")
    var script: String

    @Option(name: .long, help: "Actor for lines before the first \"actor\".")
    var actor = "unknown"

    @Option(name: .long, help: "Device for lines before the first \"device\".")
    var device = "unknown"

    @Flag(name: .long, help: "Record the script even if the same bytes were recorded before.")
    var allowRepeat = false

    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let bytes = try InputFiles.bytes(script)
            let commands: [ScriptCommand]
            do throws(EditLogError) { commands = try ScriptParser.parse(bytes, defaultActor: actor, defaultDevice: device) } catch { throw error.at(script) }
            let editLog = try log.open()
            let result: RecordResult
            do throws(EditLogError) { result = try editLog.record(commands, name: (script as NSString).lastPathComponent, sha256: InputFiles.sha256(bytes), allowRepeat: allowRepeat) }
            catch { throw error.at(script) }
            let sessions = Dictionary(grouping: result.events.filter { ["SessionCommitted", "SessionCanceled", "SessionAbandoned"].contains($0.type) }, by: \.type)
            if output.json {
                out(JSONValue.object([
                    "script": .string(script), "lines": .int(Int64(commands.count)), "events": .int(Int64(result.events.count)),
                    "alreadyRecordedAt": result.alreadyRecordedAt.map { .int($0) } ?? .null,
                    "firstPosition": result.events.first.map { .int($0.position) } ?? .null,
                    "lastPosition": result.events.last.map { .int($0.position) } ?? .null,
                    "committed": .int(Int64(sessions["SessionCommitted"]?.count ?? 0)), "canceled": .int(Int64(sessions["SessionCanceled"]?.count ?? 0)),
                    "abandoned": .int(Int64(sessions["SessionAbandoned"]?.count ?? 0)),
                ]).serialized())
            } else if let pos = result.alreadyRecordedAt {
                out("\(script): already recorded (at position \(pos)); nothing written. Use --allow-repeat to record it again.")
            } else {
                out("\(script): \(commands.count) lines, \(result.events.count) events (positions \(result.events.first?.position ?? 0)–\(result.events.last?.position ?? 0)); sessions committed \(sessions["SessionCommitted"]?.count ?? 0), canceled \(sessions["SessionCanceled"]?.count ?? 0), abandoned \(sessions["SessionAbandoned"]?.count ?? 0)")
            }
        }
    }
}
