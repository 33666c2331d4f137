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
    /// A script whose SHA-256 was recorded before is a no-op unless `allowRepeat`.
    public func record(_ commands: [ScriptCommand], name: String, sha256: String, allowRepeat: Bool = false) throws(EditLogError) -> RecordResult {
        guard sha256.utf8.count == 64, Hex.decode(sha256) != nil else {
            throw EditLogError(.invalidInput, "a script's sha256 must be 64 hex digits, got \"\(sha256.prefix(70))\"")
        }
        let schema = self.schema
        let geocoder = self.geocoder
        return try writeMapped { db, appender, projector in
            if !allowRepeat, let pos = try Int64.fetchOne(db, sql: "SELECT position FROM p_scripts WHERE sha256 = ?", arguments: [sha256]) {
                return RecordResult(events: [], alreadyRecordedAt: pos)
            }
            for c in commands {
                do { try Self.execute(c, db: db, appender: &appender, projector: projector, schema: schema, geocoder: geocoder) }
                catch let e as EditLogError { throw e.at("line \(c.line)") }
            }
            let last = commands.last
            let ctx = EventContext(actor: last?.actor ?? "unknown", device: last?.device ?? "unknown", clientTime: last?.at)
            let e = NewEvent(id: appender.ids.next(), stream: StreamName.scripts, type: .scriptRecorded,
                             payload: ["sha256": .string(sha256), "name": .string(name), "lines": .int(Int64(commands.count))],
                             context: ctx, session: nil, cause: Cause.system)
            try projector.apply(try appender.append(e), db)
            return RecordResult(events: appender.appended, alreadyRecordedAt: nil)
        }
    }

    /// One step in its own transaction (the library API apps use, one call per pop-up action).
    @discardableResult
    public func apply(_ command: ScriptCommand) throws(EditLogError) -> [RecordedEvent] {
        let schema = self.schema
        let geocoder = self.geocoder
        return try writeMapped { db, appender, projector in
            try Self.execute(command, db: db, appender: &appender, projector: projector, schema: schema, geocoder: geocoder)
            return appender.appended
        }
    }

    static func execute(_ c: ScriptCommand, db: Database, appender: inout Appender, projector: Projector, schema: ServiceSchema,
                        geocoder: (any ReverseGeocoder)?) throws {
        let world = ProjectedState(db: db, schema: schema, projector: projector)
        let decider = EditDecider(world: world)
        let ctx = EventContext(actor: c.actor, device: c.device, clientTime: c.at)
        func emit(_ pending: [PendingEvent]) throws {
            for p in pending {
                let e = NewEvent(id: appender.ids.next(), stream: p.stream, type: p.type, payload: p.payload, context: ctx, session: p.session, cause: p.cause)
                try projector.apply(try appender.append(e, expected: .any, blob: p.blob), db)
            }
        }
        let rules = RuleEngine(world: world, geocoderOverride: geocoder)
        switch c.op {
        case .create(let layer, let gid, let geometry, let attributes, let parent):
            let sid = c.session ?? appender.ids.next().lowercasedString
            try emit(try decider.create(sessionId: sid, layer: layer, globalId: gid, geometry: geometry, attributes: attributes, parent: parent, actor: c.actor))
        case .edit(let layer, let gid):
            let sid = c.session ?? appender.ids.next().lowercasedString
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
            try emit(try rules.derive(after: .committed(layer: s.layerId, globalId: s.globalId, kind: s.kind, before: before, session: s.id)))
            let left = committed.filter { $0.type == .sessionCommitted }.flatMap { Self.parentsLeft(layer: $0.payload["layer"]?.intValue, changes: $0.payload["changes"], schema: schema) }
            try release(deleted: [], left: left, ctx, db: db, appender: &appender, projector: projector, schema: schema, geocoder: geocoder)
        case .delete(let layer, let gid):
            let pending = try decider.delete(layer: layer, globalId: gid, session: c.session)
            try emit(pending)
            var deleted: [(layer: Int, globalId: String)] = []
            for p in pending where p.type == .featureDeleted {
                guard let l = p.payload["layer"]?.intValue, let g = p.payload["globalId"]?.stringValue else { continue }
                try emit(try rules.derive(after: .deleted(layer: Int(l), globalId: g, attributes: p.payload["attributes"]?.objectValue ?? [:], session: c.session)))
                deleted.append((Int(l), g))
            }
            try release(deleted: deleted, left: [], ctx, db: db, appender: &appender, projector: projector, schema: schema, geocoder: geocoder)
        case .resume, .abandon:
            guard let id = c.session else { throw EditLogError(.invalidInput, "\(c.op.name) needs \"session\"") }
            guard let s = try world.session(id: id) else { throw EditLogError(.notFound, "no session \"\(id)\"") }
            guard s.status == .open else { throw EditLogError(.conflict, "session \"\(id)\" is \(s.status.rawValue), not open") }
            try emit(c.op == .resume ? decider.resume(s) : decider.abandon(s))
        }
    }

    /// In a log that merged, a change may leave a record that lived only because a feature it deleted did, or a parent
    /// kept for an orphan that nothing keeps any more: they are deleted again in the change's transaction, as an import
    /// would (`Importer.release`). Elsewhere one cheap look (`Importer.mayRelease`) finds nothing to do.
    static func release(deleted: [(layer: Int, globalId: String)], left: [(layer: Int, globalId: String)], _ context: EventContext, db: Database,
                        appender: inout Appender, projector: Projector, schema: ServiceSchema, geocoder: (any ReverseGeocoder)?) throws {
        guard let logId = projector.logId, try Importer.mayRelease(deleted: deleted, left: left, schema: schema, db: db) else { return }
        var importer = try Importer(schema: schema, policy: .lastInWins, ownLog: logId, context: context, source: "record")
        try importer.release(deleted: deleted, left: left, db: db, appender: &appender, projector: projector, geocoder: geocoder)
    }

    /// The parents (by GlobalID key) a change of a record (a commit's or a resolution's `changes`) pointed it away from:
    /// the old values of the relationship keys it changed.
    static func parentsLeft(layer id: Int64?, changes: JSONValue?, schema: ServiceSchema) -> [(layer: Int, globalId: String)] {
        guard let id, let layer = schema.layer(id: Int(id)), let changes = changes?.objectValue, !changes.isEmpty else { return [] }
        var out: [(layer: Int, globalId: String)] = []
        for rel in layer.relationships where rel.role == .destination {
            guard let fk = layer.field(named: rel.keyField)?.name.lowercased(),
                  let old = changes.first(where: { $0.key.lowercased() == fk })?.value["old"]?.stringValue.flatMap(GlobalID.normalize),
                  let (parent, _) = schema.counterpart(of: rel, in: layer) else { continue }
            out.append((parent.id, old))
        }
        return out
    }
}
