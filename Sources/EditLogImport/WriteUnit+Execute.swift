import EditLogCore
import EditLogProjections
import Foundation

extension WriteUnit {
    /// One step of an edit script (a script's line, or one pop-up action) in this transaction: what the decider
    /// (`EditDecider`) decides on the state the unit holds is emitted; a finish or a delete then derives (`derive`) and
    /// releases (`release`). A line's `cause` replaces the cause of the session's start and commit and of a delete.
    public mutating func execute(_ c: ScriptCommand) throws {
        let schema = self.schema
        let world = self.world
        let decider = EditDecider(world: world)
        let ctx = EventContext(actor: c.actor, device: c.device, clientTime: c.at)
        func emit(_ pending: [PendingEvent]) throws {
            guard let cause = c.cause else { return try self.emit(pending, context: ctx) }
            try self.emit(pending.map { p in
                var p = p
                switch p.body {
                case .sessionStarted, .sessionCommitted: p.cause = cause
                case .featureDeleted where p.cause == Cause.delete: p.cause = cause
                default: break
                }
                return p
            }, context: ctx)
        }
        switch c.op {
        case .create(let layer, let gid, let geometry, let attributes, let parent):
            let sid = c.session ?? ids.next().lowercasedString
            try emit(try decider.create(sessionId: sid, layer: layer, globalId: gid, geometry: geometry, attributes: attributes, parent: parent, actor: c.actor))
        case .edit(let layer, let gid):
            let sid = c.session ?? ids.next().lowercasedString
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
            try derive(after: .committed(layer: s.layerId, globalId: s.globalId, kind: s.kind, before: before, session: s.id), context: ctx)
            let left = committed.flatMap { p -> [(layer: Int, globalId: String)] in
                guard case .sessionCommitted(let c) = p.body else { return [] }
                return Self.parentsLeft(layer: c.layer, changes: c.changes, schema: schema)
            }
            try release(deleted: [], left: left, context: ctx)
        case .delete(let layer, let gid):
            let pending = try decider.delete(layer: layer, globalId: gid, session: c.session)
            try emit(pending)
            var deleted: [(layer: Int, globalId: String)] = []
            for p in pending {
                guard case .featureDeleted(let d) = p.body else { continue }
                try derive(after: .deleted(layer: d.layer, globalId: d.globalId, attributes: d.attributes, session: c.session), context: ctx)
                deleted.append((d.layer, d.globalId))
            }
            try release(deleted: deleted, left: [], context: ctx)
        case .resume, .abandon:
            guard let id = c.session else { throw EditLogError(.invalidInput, "\(c.op.name) needs \"session\"") }
            guard let s = try world.session(id: id) else { throw EditLogError(.notFound, "no session \"\(id)\"") }
            guard s.status == .open else { throw EditLogError(.conflict, "session \"\(id)\" is \(s.status.rawValue), not open") }
            try emit(c.op == .resume ? decider.resume(s) : decider.abandon(s))
        }
    }
}
