import ArgumentParser
import EditLog
import Foundation

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write one self-contained HTML report of a window of the log (no network, no script: inline CSS and SVG).",
        discussion: "Sessions per actor over time, counts by layer, actor and cause, derived edits with their cause, canceled and abandoned sessions with what they discarded, conflicts (base, local and remote with their writers, the policy's winner, resolutions by hand), and a map of the features edited in the window coloured by kind of change. --json prints the figures instead.")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "Start (exclusive): a position or an ISO-8601 time on the --by clock (default: the end of the baseline, so the features the log was made from are the starting state, not edits; 0 counts them as created).")
    var from: String?

    @Option(name: .long, help: "End (inclusive): a position or an ISO-8601 time on the --by clock (default: the end).")
    var to: String?

    @OptionGroup var clock: ClockOption

    @Option(name: .long, help: "The HTML file to write.")
    var out: String?

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let from { _ = try auditPoint(from, "--from") }
        if let to { _ = try auditPoint(to, "--to") }
        if out == nil && !output.json { throw ValidationError("--out FILE is required (or --json for the figures)") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let bar = ProgressBar(label: "report")
            let r = try editLog.report(from: from.flatMap(LogMoment.init), to: to.flatMap(LogMoment.init), clock: clock.clock, progress: bar.update)
            bar.finish()
            if let path = out {
                try r.writeHTML(to: path)
            }
            if output.json {
                func counts(_ d: [String: Int]) -> JSONValue { .object(d.mapValues { .int(Int64($0)) }) }
                var kinds: [String: Int] = [:]
                for c in r.changes { kinds[c.kind.rawValue, default: 0] += 1 }
                print(JSONValue.object([
                    "from": r.from.json, "to": r.to.json, "clock": .string(r.clock.rawValue), "sessions": .int(Int64(r.sessionCount)),
                    "byLayer": counts(r.byLayer), "byActor": counts(r.byActor), "byCause": counts(r.byCause),
                    "derived": .int(Int64(r.derived.count)), "discarded": .array(r.discarded.map { .string($0.id) }),
                    // As the page: what the window's events did (the summary), and the net change (the map).
                    "edited": r.edited.json, "baselineEnd": .int(r.baselineEnd), "changed": counts(kinds),
                    "conflicts": .array(r.conflicts.map { .string($0.conflict.id) }),
                    "schemaChanges": .array(r.schemaChanges.map(\.json)),
                    "out": out.map { .string($0) } ?? .null,
                ]).serialized())
            } else if let path = out {
                print("wrote \(path): \(r.sessionCount) sessions, \(r.byCause.values.reduce(0, +)) feature changes (features \(r.edited.created) created, \(r.edited.updated) updated, \(r.edited.deleted) deleted), \(r.derived.count) derived edits, \(r.discarded.count) discarded sessions, \(r.changes.count) features changed between the two moments, \(r.conflicts.count) conflicts, \(r.schemaChanges.count) schema changes")
            }
        }
    }
}
