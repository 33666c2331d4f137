import ArgumentParser
import EditLog

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What changed between two moments: per layer, features added, deleted and updated, each field old → new and who changed it.",
        discussion: "FROM is exclusive, TO inclusive; each is a position or an ISO-8601 time on the --by clock. Only the events in between are read. A feature created and deleted in between, and a field changed and changed back, are left out. Editor-tracking fields count as fields: an update that moved only them is marked \"(editor tracking only)\" (JSON: \"trackingOnly\": true). Each moment has its own schema: a field added in between shows its values as changes (null → value); a field removed in between is listed once as a schema change (\"schema: field-removed …\"; JSON: \"schemaChanges\") and its values are not (the state at TO has no such field).")

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, geojson }

    @OptionGroup var log: LogOptions

    @Argument(help: "From (exclusive): a position or an ISO-8601 time.")
    var from: String

    @Argument(help: "To (inclusive): a position or an ISO-8601 time.")
    var to: String

    @Option(name: .long, help: "Only this layer or table (name or id).")
    var layer: String?

    @OptionGroup var clock: ClockOption

    @Option(name: .long, help: "text, json, or geojson (a FeatureCollection of the changed features).")
    var format: Format = .text

    @Flag(name: .long, help: "The same as --format json.")
    var json = false

    func validate() throws {
        switch (try auditPoint(from, "FROM"), try auditPoint(to, "TO")) {
        case (.position(let a), .position(let b)) where a > b: throw ValidationError("FROM (position \(a)) is after TO (position \(b))")
        case (.time(let a), .time(let b)) where a > b: throw ValidationError("FROM (\(a)) is after TO (\(b))")
        default: break
        }
        if json && format == .geojson { throw ValidationError("--json and --format geojson cannot be combined") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let format = json ? .json : self.format
            let d = try editLog.diff(from: LogMoment(from)!, to: LogMoment(to)!, layer: layer, clock: clock.clock, geometry: format == .geojson)
            switch format {
            case .json: out(d.json.serialized()); return
            case .geojson: out(d.geoJSON.serialized()); return
            case .text: break
            }
            out("changes after \(d.from) up to \(d.to) (\(d.clock.rawValue) clock): \(d.events) events")
            for (layerName, changes) in orderedGroups(d.changes) {
                let count = { (k: FeatureChange.Kind) in changes.filter { $0.kind == k }.count }
                let tracking = changes.filter(\.trackingOnly).count
                out("\(layerName): \(count(.added)) added, \(count(.deleted)) deleted, \(count(.updated)) updated" + (tracking > 0 ? " (\(tracking) editor tracking only)" : ""))
                // The layer as the log has it now (a layer removed since shows its values as they are).
                let l = try? editLog.layer(layerName)
                for c in changes {
                    let mark = switch c.kind { case .added: "+"; case .deleted: "-"; case .updated: "~" }
                    out("  \(mark) \(c.globalId)  by \(c.actors.joined(separator: ", ")); sessions \(c.sessions.isEmpty ? "-" : c.sessions.joined(separator: ", "))\(c.trackingOnly ? "  (editor tracking only)" : "")")
                    for f in c.fields {
                        let text = l.map { Self.text(f, layer: $0, log: editLog, width: 40) } ?? "\(short(f.old, 40)) → \(short(f.new, 40))"
                        out("      \(f.field): \(text)  (\(f.actors.joined(separator: ", ")); \(f.causes.joined(separator: ", ")))")
                    }
                }
            }
            for c in d.schemaChanges {
                out("schema: \(c.text) at position \(c.position) (SchemaChanged, cause \(c.cause), by \(c.actor)@\(c.device))")
            }
            out("\(d.changes.count) features changed" + (d.schemaChanges.isEmpty ? "" : ", \(d.schemaChanges.count) schema changes"))
        }
    }

    /// A changed field's `old → new` in a text output (this command's and the demo's diff step), each value as
    /// people read it (`displayValue`: a date field, editor tracking's included, in `Timestamp.human`'s form).
    static func text(_ f: FieldChange, layer: LayerSchema, log: EditLog, width: Int) -> String {
        "\(displayValue(f.field, f.old, layer: layer, log: log, width: width)) → \(displayValue(f.field, f.new, layer: layer, log: log, width: width))"
    }

    func orderedGroups(_ changes: [FeatureChange]) -> [(String, [FeatureChange])] {
        var out: [(String, [FeatureChange])] = []
        for c in changes {
            if let i = out.firstIndex(where: { $0.0 == c.layerName }) { out[i].1.append(c) } else { out.append((c.layerName, [c])) }
        }
        return out
    }
}
