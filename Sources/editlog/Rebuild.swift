import ArgumentParser
import EditLog

struct Rebuild: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Drop the projections and rebuild them from the events (one transaction).")

    @OptionGroup var log: LogOptions
    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open()
            let bar = ProgressBar(label: "rebuild")
            try editLog.rebuild(progress: bar.update)
            bar.finish()
            let n = try editLog.eventCount()
            out(output.json ? JSONValue.object(["rebuilt": true, "events": .int(n)]).serialized() : "rebuilt projections from \(n) events")
        }
    }
}
