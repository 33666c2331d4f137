import ArgumentParser
import EditLog

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List edit sessions (open, committed, canceled, abandoned) with their staged changes; abandon a session left open.")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "Only sessions in this state: open, committed, canceled or abandoned.")
    var status: String?

    @Option(name: .long, help: "Only sessions opened or resumed by this actor.")
    var actor: String?

    @Option(name: .long, help: "Only sessions on this feature (GlobalID).")
    var feature: String?

    @OptionGroup var clock: ClockOption

    @Option(name: .long, help: "Abandon this open session (recorded as an event) instead of listing.")
    var abandon: String?

    @Option(name: .long, help: "With --abandon: the actor who abandons it.")
    var abandonedBy = "unknown"

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let s = status, !["open", "committed", "canceled", "abandoned"].contains(s) {
            throw ValidationError("--status must be open, committed, canceled or abandoned")
        }
        if abandon != nil && (status != nil || feature != nil) { throw ValidationError("--abandon cannot be combined with --status or --feature") }
    }

    func run() throws {
        try handleErrors {
            if let id = abandon {
                let editLog = try log.open()
                let events = try editLog.apply(ScriptCommand(line: 0, op: .abandon, actor: abandonedBy, device: "editlog-cli", at: nil, session: id))
                out(output.json ? JSONValue.array(events.map(\.json)).serialized() : "session \(id) abandoned at position \(events.last?.position ?? 0)")
                return
            }
            let editLog = try log.open(readonly: true)
            let list = try editLog.sessions(status: status, actor: actor, globalId: feature, clock: clock.clock)
            if output.json { out(JSONValue.array(list.map(\.json)).serialized()); return }
            out(table(["session", "status", "kind", "layer", "feature", "actor", "device", "started (\(clock.clock.rawValue))", "staged"], list.map { s in
                let st = s.state
                let fields = editLog.schema.layer(id: st.layerId)
                let staged = st.staged.map { "\(short(.string($0.field)))=\(fieldText($0.value, fields?.field($0.field), 16))" }
                let rel = s.relationships.map { "\($0.name)→\(short(.string($0.globalId), 12))" }
                let att = st.attachmentsAdded.map { "+\(short(.string($0.name)))" }
                let layer = editLog.schema.layer(id: st.layerId)?.name ?? "layer \(st.layerId)"
                return [st.id, st.status.rawValue, st.kind.rawValue, layer, short(.string(st.globalId), 38), st.actor, st.device,
                        Timestamp.human(s.startedTime), (staged + rel + att).joined(separator: ", ")]
            }))
            // What each session staged beyond field values: attachments (with their bytes' identity) and relationship choices.
            for s in list where !s.state.attachmentsAdded.isEmpty || !s.relationships.isEmpty {
                out("\(s.id) (\(s.status.rawValue)):")
                for a in s.state.attachmentsAdded { out("  attachment \(a.name)  \(a.size) bytes  sha256 \(a.sha256)") }
                for r in s.relationships { out("  relationship \(r.name) → \(r.globalId)") }
            }
            out("\(list.count) sessions")
        }
    }
}
