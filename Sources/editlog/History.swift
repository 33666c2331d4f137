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
            out(historyTable(entries, layer: layer, log: editLog))
        }
    }
}

func historyTable(_ entries: [HistoryEntry], layer: LayerSchema, log: EditLog) -> String {
    // Dates are stored as Esri epoch milliseconds; people read them as ISO-8601. A relationship key reads
    // as the related record's display field (the species' common name, not its GlobalID).
    let keys = Set(layer.relationships.filter { $0.role == .destination }.compactMap { $0.keyField?.lowercased() })
    func value(_ field: String, _ v: JSONValue) -> String {
        if layer.field(field)?.type == .date, let ms = v.intValue { return String(Timestamp.format(milliseconds: ms).prefix(19)) }
        if keys.contains(field.lowercased()), let g = v.stringValue, let f = try? log.show(globalId: g),
           let related = f["layer"]?.stringValue.flatMap(log.schema.layer), let display = related.displayField,
           let name = f["attributes"]?[display]?.stringValue {
            return short(.string(name), 24)
        }
        return short(v, 24)
    }
    return table(["pos", "time", "actor", "device", "session", "field", "old", "new", "cause"], entries.map {
        [String($0.position), String($0.time.prefix(19)), $0.actor, $0.device, $0.session ?? "-", $0.field, value($0.field, $0.old), value($0.field, $0.new), $0.cause]
    })
}
