import ArgumentParser
import EditLog
import EditLogSync
import Foundation

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "The log's schema at any moment, what changed between two, and a change recorded by hand.",
        discussion: """
            The log may come first: `editlog schema DB` (the schema now), `schema DB --as-of 2026-05-01`, \
            `schema DB diff FROM TO`, `schema DB apply --service F|URL`. Every schema change is a SchemaChanged event \
            with its cause: sync (a sync that met new definitions), schema-apply, or import:<log> (a bundle's).
            """,
        subcommands: [SchemaShow.self, SchemaDiff.self, SchemaApply.self], defaultSubcommand: SchemaShow.self)

    /// `schema DB ACTION …` → `schema ACTION DB …` (see `ConflictsCommand.logFirst`).
    static func logFirst(_ arguments: [String]) -> [String] {
        let actions: Set<String> = ["show", "diff", "apply"]
        guard arguments.count >= 3, arguments[0] == configuration.commandName, !arguments[1].hasPrefix("-"),
              !actions.contains(arguments[1]), actions.contains(arguments[2]) else { return arguments }
        var reordered = arguments
        reordered.swapAt(1, 2)
        return reordered
    }

    /// The schema version in force at `moment` (a position or a time on `clock`).
    static func version(_ log: EditLog, _ moment: String?, _ clock: EventClock, _ what: String) throws -> SchemaVersion {
        guard let moment else { return try log.schemaVersions().last! }
        return try log.schemaVersion(atOrBefore: try log.position(asOf: try auditPoint(moment, what), by: clock))
    }

    static func header(_ v: SchemaVersion) -> String {
        "\(v.type) at position \(v.position), \(Timestamp.human(v.time)) by \(v.actor) (cause \(v.cause)\(v.source.map { ", from \($0)" } ?? ""))"
    }

    static func json(_ v: SchemaVersion) -> JSONValue {
        .object(["position": .int(v.position), "type": .string(v.type), "cause": .string(v.cause), "actor": .string(v.actor),
                 "device": .string(v.device), "time": .string(v.time), "source": v.source.map { .string($0) } ?? .null,
                 "changes": .array(v.changes.map(\.json)), "conflicts": .int(Int64(v.conflicts.count)), "layers": v.schema.json])
    }
}

struct SchemaShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "The schema in force now, or at a moment: layers, fields, domains, relationships.")

    @OptionGroup var log: LogOptions

    @Option(name: .customLong("as-of"), help: ArgumentHelp("A position, or an ISO-8601 time (on the --by clock).", valueName: "moment"))
    var asOf: String?

    @OptionGroup var clock: ClockOption
    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let v = try SchemaCommand.version(editLog, asOf, clock.clock, "--as-of")
            if json.json { out(SchemaCommand.json(v).serialized()); return }
            out(SchemaCommand.header(v))
            for l in v.schema.layers {
                out("\(l.id) \(l.name)\(l.isTable ? " (table)" : "")")
                for f in l.fields {
                    var notes: [String] = []
                    if let d = f.domain { notes.append(ServiceSchema.describe(d)) }
                    if !f.editable { notes.append("not editable") }
                    if !f.nullable { notes.append("required") }
                    out("  \(f.name)  \(f.type.esriName.replacingOccurrences(of: "esriFieldType", with: ""))\(f.length.map { "(\($0))" } ?? "")"
                        + (notes.isEmpty ? "" : "  " + notes.joined(separator: "; ")))
                }
                for r in l.relationships { out("  relationship \(r.name) (\(r.id)) to layer \(r.relatedTableId), key \(r.keyField ?? "-")") }
            }
        }
    }
}

struct SchemaDiff: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "diff", abstract: "What changed in the schema between two moments, and which events changed it.")

    @OptionGroup var log: LogOptions

    @Argument(help: "From: a position or an ISO-8601 time.")
    var from: String

    @Argument(help: "To: a position or an ISO-8601 time.")
    var to: String

    @OptionGroup var clock: ClockOption
    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let a = try SchemaCommand.version(editLog, from, clock.clock, "FROM"), b = try SchemaCommand.version(editLog, to, clock.clock, "TO")
            // Each change between them, with the event that made it (the net change when there are several).
            let steps = try editLog.schemaVersions().filter { $0.position > a.position && $0.position <= b.position }
            let net = a.schema.changes(to: b.schema)
            if json.json {
                out(JSONValue.object(["from": .int(a.position), "to": .int(b.position), "changes": .array(net.map(\.json)),
                                      "events": .array(steps.map(SchemaCommand.json))]).serialized())
                return
            }
            if net.isEmpty { out("no schema change between position \(a.position) and \(b.position)") }
            for c in net { out(c.text) }
            if !steps.isEmpty { out("") }
            for s in steps {
                out(SchemaCommand.header(s))
                for c in s.changes { out("  \(c.text)") }
            }
        }
    }
}

struct SchemaApply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Record new service definitions as the log's schema (a log that does not sync).",
        discussion: """
            --service takes the same as `init`: a FeatureServer/layers JSON file (or a root plus layer definitions), or a \
            live FeatureServer URL. What differs from the schema in force is recorded as one SchemaChanged event, the \
            projection tables follow in the same transaction, and added fields and layers join the log's pop-ups. A field \
            whose type changed, or a string narrowed below a value a feature holds, is refused with nothing written.
            """)

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "A service, layers or layer definition JSON file (repeatable), or one FeatureServer URL.")
    var service: [String] = []

    @OptionGroup var tokens: TokenOptions

    @Flag(name: .customLong("dry-run"), help: "Say what would change; write nothing.")
    var dryRun = false

    @Option(name: .long, help: "Who records the change.")
    var actor = ProcessInfo.processInfo.environment["USER"] ?? "editlog"

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if service.isEmpty { throw ValidationError("--service is required: the new definitions (a file or a FeatureServer URL)") }
    }

    func run() async throws {
        try await handleErrors {
            let editLog = try log.open()
            let urls = service.filter { let l = $0.lowercased(); return (l.hasPrefix("http://") || l.hasPrefix("https://")) && !FileManager.default.fileExists(atPath: $0) }
            let docs: [(name: String, json: JSONValue)]
            let source: String
            if let url = urls.first {
                guard service.count == 1 else { throw ValidationError("--service \(url) is a live service: give it alone") }
                let client = try tokens.client(url: url)
                docs = [(name: "layers", json: try await client.definitions().layers)]
                source = url
            } else {
                docs = try service.map { p throws(EditLogError) in (name: (p as NSString).lastPathComponent, json: try InputFiles.json(p)) }
                source = service.joined(separator: ", ")
            }
            let update = try editLog.changeSchema(service: docs, cause: Cause.schemaApply, source: source, actor: actor, device: "editlog-cli", dryRun: dryRun)
            if json.json {
                out(JSONValue.object(["position": update.position.map { .int($0) } ?? .null, "dryRun": .bool(dryRun),
                                      "changes": .array(update.changes.map(\.json))]).serialized())
                return
            }
            if update.changes.isEmpty { out("the log's schema already is these definitions: nothing recorded"); return }
            out(dryRun ? "would record \(update.changes.count) changes:" : "recorded \(update.changes.count) changes at position \(update.position ?? 0):")
            for c in update.changes { out("  \(c.text)") }
        }
    }
}
