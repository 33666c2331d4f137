import ArgumentParser
import EditLog
import EditLogServer
import Foundation

struct ReplicasCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicas",
        abstract: "The replicas `serve` handed out: who took which layers and area offline, when, and each synchronize.",
        discussion: "The log may come first too: `editlog replicas DB list`, `replicas DB show ID`.",
        subcommands: [ReplicasList.self, ReplicasShow.self], defaultSubcommand: ReplicasList.self)

    /// `replicas DB ACTION …` → `replicas ACTION DB …` (see `ConflictsCommand.logFirst`).
    static func logFirst(_ arguments: [String]) -> [String] {
        let actions: Set<String> = ["list", "show"]
        guard arguments.count >= 3, arguments[0] == configuration.commandName, !arguments[1].hasPrefix("-"),
              !actions.contains(arguments[1]), actions.contains(arguments[2]) else { return arguments }
        var reordered = arguments
        reordered.swapAt(1, 2)
        return reordered
    }

    static func records(_ log: LogOptions) throws -> (EditLog, [ReplicaRecord]) {
        let editLog = try log.open(readonly: true)
        return (editLog, try ReplicaRecord.all(editLog.streamEvents(StreamName.replicas)))
    }
}

struct ReplicasList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Every replica: owner, device, layers, area, created, synchronizations, closed.")

    @OptionGroup var log: LogOptions
    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let (_, all) = try ReplicasCommand.records(log)
            if json.json { out(JSONValue.array(all.map(\.json)).serialized()); return }
            if all.isEmpty { out("no replicas"); return }
            out(table(["replica", "name", "user", "device", "layers", "area", "created", "syncs", "gen", "state"], all.map { r in
                [r.id, r.name, r.user, String(r.device.prefix(24)), r.layers.map(String.init).joined(separator: ","), r.geometry == nil ? "all" : "area",
                 Timestamp.human(r.createdAt), String(r.syncs.count), String(r.serverGen), r.closed ? "closed (\(r.closedBy ?? ""))" : "open"]
            }))
        }
    }
}

struct ReplicasShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One replica: what it took offline, and each synchronize with what it uploaded, was sent and overwrote.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The replica id (its GlobalID, braces optional).")
    var id: String

    @OptionGroup var json: JSONFlag

    func validate() throws {
        guard GlobalID.normalize(id) != nil else { throw ValidationError("\"\(id.prefix(60))\" is not a replica id ({8-4-4-4-12 hex digits})") }
    }

    func run() throws {
        try handleErrors {
            let (_, all) = try ReplicasCommand.records(log)
            let gid = GlobalID.normalize(id)
            guard let r = all.first(where: { $0.id == gid }) else { throw EditLogError(.notFound, "no replica \(id) (`editlog replicas DB list` shows them)") }
            if json.json { out(r.json.serialized()); return }
            out("replica \(r.id) \"\(r.name)\": \(r.user) on \(r.device), \(Timestamp.human(r.createdAt)) (position \(r.position))")
            let queries = JSONValue.object(r.layerQueries).serialized()
            out("  layers \(r.layers.map(String.init).joined(separator: ", ")); queries \(queries); area \(r.geometry?.serialized() ?? "everywhere")")
            out("  sync model \(r.syncModel), attachments \(r.returnAttachments ? "yes" : "no"), generation \(r.createdGen) → \(r.serverGen); \(r.closed ? "closed by \(r.closedBy ?? "?")" : "open")")
            let sent = r.created.features.sorted { $0.key < $1.key }.map { "layer \($0.key): \($0.value.intValue ?? 0)" }
            out("  sent: " + sent.joined(separator: ", "))
            for s in r.syncs {
                let p = s.record
                let up = p.uploaded
                func n(_ k: String) -> Int { up[k]?.arrayValue?.count ?? 0 }
                let from = p.fromServerGen.map(String.init) ?? "-"
                out("  synchronize at \(Timestamp.human(s.at)) (position \(s.position)) by \(p.user), \(p.syncDirection) from generation \(from)")
                out("    uploaded \(n("adds")) adds, \(n("updates")) updates, \(n("deletes")) deletes, \(up["attachments"]?.intValue ?? 0) attachment edits in \(up["sessions"]?.arrayValue?.count ?? 0) sessions")
                let d = p.downloaded
                out("    sent \(d["adds"]?.intValue ?? 0) adds, \(d["updates"]?.intValue ?? 0) updates, \(d["deletes"]?.intValue ?? 0) deletes")
                for o in p.overwrote {
                    out("    overwrote \(o["globalId"]?.stringValue ?? "?") \(o["field"]?.stringValue ?? "?"): \(short(o["service"] ?? .null)) by \(o["serviceActor"]?.stringValue ?? "?") → \(short(o["upload"] ?? .null))")
                }
            }
        }
    }
}
