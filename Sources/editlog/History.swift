import ArgumentParser
import EditLog

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The field-level timeline of one feature: who changed which field, when, in which session, and why.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The feature's GlobalID.")
    var globalId: String

    @Flag(name: .long, help: "Leave out the baseline values.")
    var noBaseline = false

    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try EditLog.open(at: log.db, readonly: true)
            let (layer, all) = try editLog.history(globalId: globalId)
            let entries = noBaseline ? all.filter { $0.cause != "baseline" } : all
            if output.json {
                out(JSONValue.object(["layer": .string(layer.name), "globalId": .string(try editLog.normalizeGlobalId(globalId)), "entries": .array(entries.map(\.json))]).serialized())
                return
            }
            out(historyTable(entries, layer: layer))
        }
    }
}

func historyTable(_ entries: [HistoryEntry], layer: LayerSchema) -> String {
    // Dates are stored as Esri epoch milliseconds; people read them as ISO-8601.
    func value(_ field: String, _ v: JSONValue) -> String {
        if layer.field(field)?.type == .date, let ms = v.intValue { return String(Timestamp.format(milliseconds: ms).prefix(19)) }
        return short(v, 24)
    }
    return table(["pos", "time", "actor", "device", "session", "field", "old", "new", "cause"], entries.map {
        [String($0.position), String($0.time.prefix(19)), $0.actor, $0.device, $0.session ?? "-", $0.field, value($0.field, $0.old), value($0.field, $0.new), $0.cause]
    })
}
