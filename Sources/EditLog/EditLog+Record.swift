import EditLogCore
import EditLogImport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

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
                do { try Self.execute(c, unit: &unit) } catch let e as EditLogError { throw e.at(line: c.line) }
            }
            let last = commands.last
            let ctx = EventContext(actor: last?.actor ?? "unknown", device: last?.device ?? "unknown", clientTime: last?.at)
            try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.scripts, type: .scriptRecorded,
                                   payload: ["sha256": .string(sha256), "name": .string(name), "lines": .int(Int64(commands.count))],
                                   context: ctx, session: nil, cause: Cause.system))
            for e in system(unit.appended) { try unit.emit(e.newEvent(id: unit.ids.next(), context: ctx)) }
            return RecordResult(events: unit.appended, alreadyRecordedAt: nil)
        }
    }

    /// One step in its own transaction (the library API apps use, one call per pop-up action).
    @discardableResult
    public func apply(_ command: ScriptCommand) throws(EditLogError) -> [RecordedEvent] {
        return try write { unit in
            try Self.execute(command, unit: &unit)
            return unit.appended
        }
    }

    /// One step: what the decider decides is emitted; a finish or a delete then derives (`WriteUnit.derive`) and
    /// releases (`WriteUnit.release`).
    static func execute(_ c: ScriptCommand, unit: inout WriteUnit) throws {
        let schema = unit.schema
        let world = unit.world
        let decider = EditDecider(world: world)
        let ctx = EventContext(actor: c.actor, device: c.device, clientTime: c.at)
        func emit(_ pending: [PendingEvent]) throws {
            guard let cause = c.cause else { return try unit.emit(pending, context: ctx) }
            try unit.emit(pending.map { p in
                var p = p
                if p.type == .sessionStarted || p.type == .sessionCommitted || (p.type == .featureDeleted && p.cause == Cause.delete) { p.cause = cause }
                return p
            }, context: ctx)
        }
        switch c.op {
        case .create(let layer, let gid, let geometry, let attributes, let parent):
            let sid = c.session ?? unit.ids.next().lowercasedString
            try emit(try decider.create(sessionId: sid, layer: layer, globalId: gid, geometry: geometry, attributes: attributes, parent: parent, actor: c.actor))
        case .edit(let layer, let gid):
            let sid = c.session ?? unit.ids.next().lowercasedString
            try emit(try decider.edit(sessionId: sid, layer: layer, globalId: gid))
        case .set(let field, let value):
            try emit(try decider.set(try decider.resolveSession(c.session, actor: c.actor), field: field, value: value))
        case .relate(let rel, let gid):
            try emit(try decider.relate(try decider.resolveSession(c.session, actor: c.actor), relationship: rel, globalId: gid))
        case .attach(let id, let name, let type, let data, let size):
            try emit(try decider.attach(try decider.resolveSession(c.session, actor: c.actor), attachmentId: id, name: name, contentType: type, data: data, preferredSize: size))
        case .renameAttachment(let id, let name):
            try emit(try decider.renameAttachment(try decider.resolveSession(c.session, actor: c.actor), attachmentId: id, name: name))
        case .detach(let id):
            try emit(try decider.detach(try decider.resolveSession(c.session, actor: c.actor), attachmentId: id))
        case .cancel:
            try emit(decider.cancel(try decider.resolveSession(c.session, actor: c.actor)))
        case .finish:
            let s = try decider.resolveSession(c.session, actor: c.actor)
            let before = try world.feature(layer: s.layerId, globalId: s.globalId)?.attributes ?? [:]
            let committed = try decider.finish(s)
            try emit(committed)
            try unit.derive(after: .committed(layer: s.layerId, globalId: s.globalId, kind: s.kind, before: before, session: s.id), context: ctx)
            let left = committed.filter { $0.type == .sessionCommitted }.flatMap { WriteUnit.parentsLeft(layer: $0.payload["layer"]?.intValue, changes: $0.payload["changes"], schema: schema) }
            try unit.release(deleted: [], left: left, context: ctx)
        case .delete(let layer, let gid):
            let pending = try decider.delete(layer: layer, globalId: gid, session: c.session)
            try emit(pending)
            var deleted: [(layer: Int, globalId: String)] = []
            for p in pending where p.type == .featureDeleted {
                guard let l = p.payload["layer"]?.intValue, let g = p.payload["globalId"]?.stringValue else { continue }
                try unit.derive(after: .deleted(layer: Int(l), globalId: g, attributes: p.payload["attributes"]?.objectValue ?? [:], session: c.session), context: ctx)
                deleted.append((Int(l), g))
            }
            try unit.release(deleted: deleted, left: [], context: ctx)
        case .resume, .abandon:
            guard let id = c.session else { throw EditLogError(.invalidInput, "\(c.op.name) needs \"session\"") }
            guard let s = try world.session(id: id) else { throw EditLogError(.notFound, "no session \"\(id)\"") }
            guard s.status == .open else { throw EditLogError(.conflict, "session \"\(id)\" is \(s.status.rawValue), not open") }
            try emit(c.op == .resume ? decider.resume(s) : decider.abandon(s))
        }
    }
}
