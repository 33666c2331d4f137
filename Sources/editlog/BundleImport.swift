import ArgumentParser
import EditLog
import Foundation

extension MergePolicy: ExpressibleByArgument {}

struct BundleImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a bundle: one transaction, all or nothing; events already here are skipped.",
        discussion: """
            Every check of `bundle verify` runs as the bundle streams in; any failure rolls the import back and \
            leaves the log byte-identical. Imported events keep their id, origin log, position and hash and are \
            chained into this log. Events about features this log changed too are merged field by field \
            (base = what the other side saw, local = this log, remote = the new value) under --policy; every \
            conflict and decision is recorded as a MergeDecided event (`editlog conflicts` lists them). Values \
            rules derive never conflict: they are derived again from the merged state. A record deleted on one \
            side that the other side related a record to is kept (never an orphan).
            """)

    @OptionGroup var log: LogOptions

    @Argument(help: "The bundle file.")
    var file: String

    @Option(name: .long, help: ArgumentHelp("How a conflict is decided: last-in-wins (the later commit by client time; ties by origin log id), local-wins, remote-wins, or manual (left open for `editlog conflicts resolve`; everything else applies).", valueName: "policy"))
    var policy: MergePolicy = .lastInWins

    @Option(name: .long, help: "A trusted public key file (editlog keys generate); repeat for several. With it, the bundle must be signed by one of them.")
    var trust: [String] = []

    @Option(name: .long, help: "Who runs the import (the actor of its decisions and derived values).")
    var actor: String = EditLog.currentUser ?? "editlog"

    @Option(name: .long, help: "Where the import runs (the device of its decisions).")
    var device: String = ProcessInfo.processInfo.hostName

    @Option(name: .long, help: ArgumentHelp("For tests: create some projection indexes after the events (always), row by row (never), or as the import's size says (auto).",
                                            valueName: "auto|always|never", visibility: .hidden))
    var indexDeferral: String = IndexDeferral.auto.rawValue

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if IndexDeferral(rawValue: indexDeferral) == nil {
            throw ValidationError("--index-deferral must be auto, always or never, not \"\(indexDeferral)\"")
        }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open()
            editLog.indexDeferral = IndexDeferral(rawValue: indexDeferral) ?? .auto
            let bar = ProgressBar(label: "import")
            let result: (report: ImportReport, contents: BundleContents)
            do {
                result = try editLog.importBundle(at: file, policy: policy, trust: try trustedKeys(trust), actor: actor, device: device, progress: bar.update)
            } catch { bar.finish(); throw error }
            bar.finish()
            let r = result.report, m = result.contents.manifest
            if json.json {
                var o = r.json.objectValue ?? [:]
                o["bundle"] = m.json
                o["policy"] = .string(policy.rawValue)
                out(JSONValue.object(o).serialized())
                return
            }
            // The manifest's word alone is not enough to say so: only when nothing was imported.
            if m.originLogId == editLog.logId && r.imported == 0 { out("the bundle holds this log's own events: nothing to import") }
            out("imported \(r.imported) events (\(r.alreadyPresent) already here) from log \(m.originLogId); \(r.blobs) new attachment blobs")
            if let f = r.firstPosition, let l = r.lastPosition { out("positions \(f)...\(l) of this log") }
            if let p = r.schemaPosition {
                out("adopted the bundle's schema additions at position \(p) (SchemaChanged, cause import:\(m.originLogId)):")
                for c in r.schemaChanges { out("  \(c.text)") }
            }
            if !r.removedFields.isEmpty || r.unprojectedValues > 0 {
                out("fields this log lacks (\(r.removedFields.isEmpty ? "removed by the bundle's log" : "removed here: " + r.removedFields.joined(separator: ", "))): "
                    + "\(r.unprojectedValues) values kept in the imported events' history, not projected")
            }
            out("\(r.decisions) merge decisions, \(r.conflicts.count) conflicts (policy \(policy.rawValue)), \(r.derived) values derived again")
            if !r.conflicts.isEmpty {
                out(table(["conflict", "kind", "feature", "field", "local", "remote", "winner"], r.conflicts.map { c in
                    let field = c.field.flatMap { editLog.schema.layer(id: c.layer)?.field($0) }
                return [c.id, c.kind.rawValue, c.globalId, c.field ?? c.attachmentId ?? "", fieldText(c.local.value, field, 24), fieldText(c.remote.value, field, 24), c.winner.rawValue]
                }))
            }
        }
    }
}
