import ArgumentParser
import EditLog
import Foundation

struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "See and re-resolve the conflicts imports met (bundles, sync).",
        discussion: "The log may come first too: `editlog conflicts DB list`, `conflicts DB show ID`, `conflicts DB resolve ID --take …`.",
        subcommands: [ConflictsList.self, ConflictsShow.self, ConflictsResolve.self], defaultSubcommand: ConflictsList.self)

    /// The command line with `conflicts DB ACTION …` (the log first, as the README writes it) turned into `conflicts
    /// ACTION DB …`, the order the parser reads subcommands in. Anything else is returned as it is.
    static func logFirst(_ arguments: [String]) -> [String] {
        let actions = Set([ConflictsList.configuration.commandName, ConflictsShow.configuration.commandName,
                           ConflictsResolve.configuration.commandName].compactMap { $0 })
        guard arguments.count >= 3, arguments[0] == configuration.commandName, !arguments[1].hasPrefix("-"),
              !actions.contains(arguments[1]), actions.contains(arguments[2]) else { return arguments }
        var reordered = arguments
        reordered.swapAt(1, 2)
        return reordered
    }
}

/// One line per conflict: the same concurrent pair of writes, whichever log decided it.
func conflictRow(_ r: ConflictRecord, schema: ServiceSchema) -> [String] {
    let c = r.conflict
    let field = c.field.flatMap { schema.layer(id: c.layer)?.field($0) }
    return [c.id, r.status, c.kind.rawValue, c.globalId, c.field ?? c.attachmentId ?? "",
            fieldText(c.local.value, field, 20), c.local.writer?.actor ?? "base", fieldText(c.remote.value, field, 20), c.remote.writer?.actor ?? "base",
            c.policy.rawValue, r.resolutions.last?.take ?? c.winner.rawValue]
}

struct ConflictsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Every conflict this log holds: its own imports' and those recorded by the logs it imported.",
        discussion: "A conflict decided by several logs (each met the same two writes) is listed once per decision; --unique keeps one per pair of writes.")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: ArgumentHelp("Only these: open (manual, unresolved), decided (by the policy) or resolved (by hand).", valueName: "status"))
    var status: String?

    @Option(name: .long, help: "Only conflicts on this feature (GlobalID).")
    var feature: String?

    @Flag(name: .long, help: "One line per pair of concurrent writes (the first decision), whichever log decided it.")
    var unique = false

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if let status, !["open", "decided", "resolved"].contains(status) {
            throw ValidationError("--status must be open, decided or resolved, not \"\(status)\"")
        }
        if let feature, GlobalID.normalize(feature) == nil {
            throw ValidationError("--feature \"\(feature.prefix(60))\" is not a GlobalID ({8-4-4-4-12 hex digits})")
        }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            var records = try editLog.conflicts()
            if let status { records = records.filter { $0.status == status } }
            if let feature {
                let g = GlobalID.normalize(feature)
                records = records.filter { $0.conflict.globalId == g }
            }
            if unique {
                var seen = Set<String>()
                records = records.filter { seen.insert($0.conflict.key).inserted }
            }
            if json.json {
                for r in records { out(r.json.serialized()) }
                return
            }
            if records.isEmpty { out("no conflicts"); return }
            out(table(["conflict", "status", "kind", "feature", "field", "local", "by", "remote", "by", "policy", "taken"], records.map { conflictRow($0, schema: editLog.schema) }))
        }
    }
}

struct ConflictsShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "One conflict: base, local and remote with who wrote each, the policy, the decision and every resolution.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The conflict id (a unique prefix of 8 characters or more is enough).")
    var id: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let r = try editLog.conflict(id: id)
            if json.json { out(r.json.serialized()); return }
            let c = r.conflict
            func who(_ w: Author?) -> String {
                guard let w else { return "the common base" }
                return "\(w.actor) on \(w.device) at \(Timestamp.human(w.time)), session \(w.session ?? "-"), event \(w.eventId) of log \(w.logId)"
            }
            out("conflict \(c.id) (\(c.kind.rawValue)) on layer \(c.layer) feature \(c.globalId)\(c.field.map { " field \($0)" } ?? "")\(c.attachmentId.map { " attachment \($0)" } ?? "")")
            out("  base:   \(c.base.serialized())")
            out("  local:  \(c.local.value.serialized())  by \(who(c.local.writer))")
            out("  remote: \(c.remote.value.serialized())  by \(who(c.remote.writer))")
            out("  rule:   \(c.ruleDescription)")
            out("  policy \(c.policy.rawValue): \(c.winner == .open ? "left open" : "\(c.winner.rawValue) won"); decided in log \(r.decidedIn) at position \(r.position) by \(r.decidedBy), \(Timestamp.human(r.decidedAt))")
            for s in r.resolutions {
                out("  resolved at position \(s.position) by \(s.actor) on \(s.device), \(Timestamp.human(s.time)): took \(s.take) = \(s.value.serialized())")
            }
            out("  status: \(r.status)")
        }
    }
}

struct ConflictsResolve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Re-resolve a field conflict: a new ConflictResolved event writes the chosen value (the decision stays as it was); --take local closes any other conflict as this log holds it.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The conflict id (a unique prefix of 8 characters or more is enough).")
    var id: String

    @Option(name: .long, help: ArgumentHelp("What to take: local, remote, base, or value (with --value).", valueName: "local|remote|base|value"))
    var take: String

    @Option(name: .long, help: ArgumentHelp("The value to write, as JSON (with --take value).", valueName: "json"))
    var value: String?

    @Option(name: .long, help: "Who resolves it.")
    var actor: String = EditLog.currentUser ?? "editlog"

    @Option(name: .long, help: "Where it is resolved.")
    var device: String = ProcessInfo.processInfo.hostName

    @OptionGroup var json: JSONFlag

    func validate() throws {
        guard ["local", "remote", "base", "value"].contains(take) else { throw ValidationError("--take must be local, remote, base or value, not \"\(take)\"") }
        if take == "value", value == nil { throw ValidationError("--take value needs --value <json>") }
        if take != "value", value != nil { throw ValidationError("--value goes with --take value only (--take is \(take))") }
    }

    func run() throws {
        try handleErrors {
            let choice: ConflictChoice
            switch take {
            case "local": choice = .local
            case "remote": choice = .remote
            case "base": choice = .base
            default:
                do { choice = .value(try JSONParser.parse(value ?? "")) } catch {
                    throw EditLogError(.invalidInput, "--value is not JSON: \(error)")
                }
            }
            let editLog = try log.open()
            let e = try editLog.resolveConflict(id: id, take: choice, actor: actor, device: device)
            if json.json { out(e.json.serialized()); return }
            if case .conflictResolved(let r) = try e.body, let field = r.field {
                out("resolved: position \(e.position), \(field) = \(r.value.serialized())")
            } else {
                out("closed as this log holds it: position \(e.position) (nothing changed)")
            }
        }
    }
}
