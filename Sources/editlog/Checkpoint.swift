import ArgumentParser
import EditLog

struct CheckpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Write projection checkpoints every N events (sidecar folder DB.checkpoints/), or check them.",
        discussion: "Checkpoints are derived data: replay starts from the nearest one; delete the folder at any time.")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "Events between checkpoints.")
    var every: Int64 = 10_000

    @Flag(name: .long, help: "Check every checkpoint against the log and its digest instead of writing.")
    var verify = false

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if every < 1 { throw ValidationError("--every must be a positive number of events") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            if verify {
                let problems = try editLog.verifyCheckpoints()
                let n = try editLog.checkpoints().count
                if json.json {
                    out(JSONValue.object(["ok": .bool(problems.isEmpty), "checkpoints": .int(Int64(n)), "problems": .array(problems.map { .string($0) })]).serialized())
                } else {
                    for p in problems { out("FAIL \(p)") }
                    out(problems.isEmpty ? "ok: \(n) checkpoints" : "\(problems.count) of \(n) checkpoints are not usable")
                }
                if !problems.isEmpty { throw EditLogError(.corrupt, "\(problems.count) checkpoints are not usable (delete them and run checkpoint again)") }
                return
            }
            let written = try editLog.createCheckpoints(every: every)
            let all = try editLog.checkpoints()
            if json.json {
                out(JSONValue.object(["written": .array(written.map { .int($0.position) }), "checkpoints": .array(all.map { .int($0.position) })]).serialized())
            } else {
                for c in written { out("wrote \(c.path)") }
                out("\(written.count) written, \(all.count) checkpoints")
            }
        }
    }
}
