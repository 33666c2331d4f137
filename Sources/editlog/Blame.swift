import ArgumentParser
import EditLog

struct Blame: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Every field value of a feature with the event that set it: position, type, actor, device, session, time and cause.",
        discussion: "The cause is `session` (a user edit), `rule:<name>` (its session is the one that triggered the rule), `baseline`, `delete` or `cascade:<GlobalID>`. With --as-of, the values at that moment.")

    @OptionGroup var log: LogOptions

    @Argument(help: "The feature's GlobalID.")
    var globalId: String

    @Option(name: .customLong("as-of"), help: "The moment: a position, or an ISO-8601 time on the --by clock (default: the end of the log).")
    var asOf: String?

    @OptionGroup var clock: ClockOption

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let asOf { _ = try auditPoint(asOf, "--as-of") }
    }

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let b = try editLog.blame(globalId: globalId, asOf: asOf.flatMap(LogMoment.init), clock: clock.clock)
            if output.json { out(b.json.serialized()); return }
            out("\(b.layer.name) \(b.globalId)\(b.asOf.map { " as of \($0)" } ?? "")")
            guard b.exists else { out("(did not exist yet)"); return }
            if let d = b.deleted { out("deleted at position \(d.position) by \(d.actor)@\(d.device), \(Timestamp.human(d.time)) (\(d.clock.rawValue)), cause \(d.cause)") }
            out(table(["field", "value", "pos", "type", "actor", "device", "session", clock.clock.label, "cause"], b.fields.map { e in
                [e.field, displayValue(e.field, e.value, layer: b.layer, log: editLog, width: 32), String(e.position), e.type, e.actor, e.device,
                 e.session ?? "-", Timestamp.human(e.time), e.conflict.map { "\(e.cause), conflict \($0)" } ?? e.cause]
            }))
        }
    }
}
