import ArgumentParser
import EditLog

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The field-level timeline of one feature: who changed which field, when, in which session, and why.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The feature's GlobalID.")
    var globalId: String

    @Option(name: .customLong("as-of"), help: "Only what happened up to this moment: a position, or an ISO-8601 time on the --by clock.")
    var asOf: String?

    @OptionGroup var clock: ClockOption

    @Flag(name: .long, help: "Leave out the baseline values.")
    var noBaseline = false

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let asOf { _ = try auditPoint(asOf, "--as-of") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let point = asOf.flatMap(LogMoment.init)
            let (layer, all) = try editLog.history(globalId: globalId, clock: clock.clock, asOf: point)
            let entries = noBaseline ? all.filter { $0.cause != "baseline" } : all
            if output.json {
                out(JSONValue.object(["layer": .string(layer.name), "globalId": .string(try editLog.normalizeGlobalId(globalId)),
                                      "clock": .string(clock.clock.rawValue), "asOf": point?.json ?? .null, "entries": .array(entries.map(\.json))]).serialized())
                return
            }
            out(historyTable(entries, layer: layer, log: editLog, clock: clock.clock))
        }
    }
}

func historyTable(_ entries: [HistoryEntry], layer: LayerSchema, log: EditLog, clock: EventClock) -> String {
    // A relationship change reads as its relationship: `SpeciesGlobalID (Species_Trees)`, `@related:Inspections (Tree_Inspections)`.
    table(["pos", clock.label, "actor", "device", "session", "field", "old", "new", "cause"], entries.map { e in
        let field = e.relationship.map { "\(e.field) (\($0))" } ?? e.field
        // A change of the layer's definition: its whole text, and the event type beside its cause.
        if let c = e.schemaChange {
            return [String(e.position), Timestamp.human(e.time), e.actor, e.device, e.session ?? "-", field, "-", c.text, "\(e.cause) (SchemaChanged)"]
        }
        return [String(e.position), Timestamp.human(e.time), e.actor, e.device, e.session ?? "-", field,
                displayValue(e.field, e.old, layer: layer, log: log), displayValue(e.field, e.new, layer: layer, log: log), e.cause]
    })
}
