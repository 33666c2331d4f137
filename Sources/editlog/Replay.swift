import ArgumentParser
import EditLog
import Foundation


/// Flags `replay` and `export` share.
struct OutputOptions: ParsableArguments {
    @Option(name: .long, help: "Where to write: .sqlite, .gpkg, .geojson or .csv (several layers in .geojson/.csv: a folder).")
    var out: String

    @Option(name: .long, help: "Only this layer or table (name or id); repeat for several. Default: all.")
    var layer: [String] = []

    @Flag(name: .long, help: "Replace existing output files.")
    var force = false
}

func warn(_ s: String) {
    FileHandle.standardError.write(Data("editlog: warning: \(s)\n".utf8))
}

func printSummary(_ s: ExportSummary, json: Bool, extra: [String: JSONValue] = [:]) {
    if json {
        var o = extra
        o["format"] = .string(s.format.rawValue)
        o["files"] = .array(s.files.map { .string($0) })
        o["features"] = .object(Dictionary(uniqueKeysWithValues: s.features.map { ($0.layer, JSONValue.int(Int64($0.count))) }))
        out(JSONValue.object(o).serialized())
        return
    }
    for (l, n) in s.features { out("\(l): \(n) features") }
    for f in s.files { out("wrote \(f)") }
}

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every layer and table as it was at a moment (a position or an ISO-8601 time).",
        discussion: """
            --as-of N replays events 1...N. --as-of TIME replays the prefix up to the last event whose time is at or \
            before TIME on the --by clock (client by default: the client's time, or the recorded time when an event \
            has none; the prefix can then hold events whose client time is later, and they are counted). Starts from the \
            nearest checkpoint (editlog checkpoint) at or before the position.
            """)

    @OptionGroup var log: LogOptions

    @Option(name: .customLong("as-of"), help: "A position (events 1...N) or an ISO-8601 time with a zone (or a date, taken as 00:00 UTC).")
    var asOf: String

    @OptionGroup var clock: ClockOption

    @Flag(name: .customLong("no-checkpoints"), help: "Replay from the first event, ignoring checkpoints.")
    var noCheckpoints = false

    @Flag(name: .long, help: "Also print the digest of the replayed tables (Projections.digest: equal to a rebuild of the same prefix); reads every row again.")
    var digest = false

    @OptionGroup var output: OutputOptions
    @OptionGroup var json: JSONFlag

    func validate() throws {
        if LogMoment(asOf) == nil { throw ValidationError("--as-of \"\(asOf)\" is neither a position nor an ISO-8601 time with a zone (or a date, taken as 00:00 UTC)") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let replaying = ProgressBar(label: "replay"), writing = ProgressBar(label: "write")
            let (r, s) = try editLog.replay(asOf: LogMoment(asOf)!, by: clock.clock, to: output.out, layers: output.layer,
                                            useCheckpoints: !noCheckpoints, overwrite: output.force, digest: digest,
                                            progress: replaying.update, writeProgress: writing.update)
            writing.finish()
            for skipped in r.skippedCheckpoints { warn("checkpoint not used: \(skipped)") }
            var extra: [String: JSONValue] = ["position": .int(r.position), "checkpoint": .int(r.checkpoint), "digest": r.digest.map(JSONValue.string) ?? .null]
            extra["clock"] = .string(clock.clock.rawValue)
            if clock.clock == .client { extra["laterClientEvents"] = .int(r.laterClientEvents) }
            if !json.json {
                out("replayed events 1...\(r.position)" + (r.checkpoint > 0 ? " (from the checkpoint at \(r.checkpoint))" : "") + (r.digest.map { ", digest \($0)" } ?? ""))
                if r.laterClientEvents > 0 { out("\(r.laterClientEvents) of them have a client time after \(asOf)") }
            }
            printSummary(s, json: json.json, extra: extra)
        }
    }
}
