import EditLogCore
import EditLogImport
import EditLogProjections
import EditLogStore
import Foundation

/// What `record` did.
public struct RecordResult: Sendable {
    public var events: [RecordedEvent]
    /// The script had been recorded before (same SHA-256): nothing was written.
    public var alreadyRecordedAt: Int64?
}

extension EditLog {
    /// Applies a whole script atomically: the first rejected line stops it, and nothing of it is written.
    /// A script whose SHA-256 was recorded before is a no-op unless `allowRepeat`. `then` gives system events, from
    /// the script's events, written after them in the same transaction (a replica's record of its upload and the
    /// conflicts its upload won): all or nothing with it.
    public func record(_ commands: [ScriptCommand], name: String, sha256: String, allowRepeat: Bool = false,
                       then system: ([RecordedEvent]) -> [SystemEvent] = { _ in [] }) throws(EditLogError) -> RecordResult {
        guard sha256.utf8.count == 64, Hex.decode(sha256) != nil else {
            throw EditLogError(.invalidInput, "a script's sha256 must be 64 hex digits, got \"\(sha256.prefix(70))\"")
        }
        return try write { unit in
            if !allowRepeat, let pos = try unit.world.scriptPosition(sha256: sha256) {
                return RecordResult(events: [], alreadyRecordedAt: pos)
            }
            for c in commands {
                do { try unit.execute(c) } catch let e as EditLogError { throw e.at(line: c.line) }
            }
            let last = commands.last
            let ctx = EventContext(actor: last?.actor ?? "unknown", device: last?.device ?? "unknown", clientTime: last?.at)
            try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.scripts, body: ScriptRecorded(sha256: sha256, name: name, lines: Int64(commands.count)).body,
                                   context: ctx, session: nil, cause: Cause.system))
            for e in system(unit.appended) { try unit.emit(e.newEvent(id: unit.ids.next(), context: ctx)) }
            return RecordResult(events: unit.appended, alreadyRecordedAt: nil)
        }
    }

    /// One step in its own transaction (the library API apps use, one call per pop-up action).
    @discardableResult
    public func apply(_ command: ScriptCommand) throws(EditLogError) -> [RecordedEvent] {
        return try write { unit in
            try unit.execute(command)
            return unit.appended
        }
    }
}
