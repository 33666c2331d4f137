import ArgumentParser
import EditLog

struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List events in position order (NDJSON with --json).")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "Only events of this layer (name or id).")
    var layer: String?

    @Option(name: .long, help: "Only events of this feature (GlobalID).")
    var feature: String?

    @Option(name: .long, help: "Only events of this session id.")
    var session: String?

    @Option(name: .long, help: "Only events by this actor.")
    var actor: String?

    @Option(name: .long, help: "Only events at or after this ISO-8601 time (on the --by clock).")
    var since: String?

    @Option(name: .long, help: "Only events before this ISO-8601 time (on the --by clock).")
    var until: String?

    @OptionGroup var clock: ClockOption

    @Option(name: .long, help: "Only events of this type (e.g. SessionCommitted).")
    var type: String?

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let s = since, Timestamp.normalize(s) == nil { throw ValidationError("--since \"\(s)\" is not an ISO-8601 time with a zone (or a date, taken as 00:00 UTC)") }
        if let u = until, Timestamp.normalize(u) == nil { throw ValidationError("--until \"\(u)\" is not an ISO-8601 time with a zone (or a date, taken as 00:00 UTC)") }
        if let s = since.flatMap(Timestamp.parse), let u = until.flatMap(Timestamp.parse), s >= u {
            throw ValidationError("--since must be earlier than --until")
        }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            var filter = LogFilter(session: session, actor: actor, since: since.flatMap(Timestamp.normalize), until: until.flatMap(Timestamp.normalize), type: type, clock: clock.clock)
            if let layer { filter.layer = try editLog.layer(layer).id }
            if let feature { filter.globalId = try editLog.normalizeGlobalId(feature) }
            if !output.json { out("pos\t\(clock.clock.label)\ttype\tstream\tactor@device\tsession\tcause\tpayload") }
            let count = try editLog.events(filter) { e in
                if output.json { out(e.json.serialized()); return }
                out("\(e.position)\t\(clock.clock.time(of: e))\t\(e.type)\t\(e.stream)\t\(e.actor)@\(e.device)\t\(e.session ?? "-")\t\(e.cause)\t\(SchemaChange.summary(of: e) ?? short(e.payload, 80))")
            }
            if !output.json { out("\(count) events") }
        }
    }
}
