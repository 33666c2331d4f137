import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// A conflict as this log knows it: the decision that met it (this log's or, imported, another's) and every
/// later resolution by hand.
public struct ConflictRecord: Sendable, Hashable {
    public var conflict: Conflict
    /// The log that decided it, and where the decision sits in this log.
    public var decidedIn: String
    public var position: Int64
    public var decidedBy: String
    public var decidedAt: String
    public var resolutions: [ConflictResolution]

    /// open (manual, not resolved yet), decided (by the policy) or resolved (by hand, latest resolution).
    public var status: String { !resolutions.isEmpty ? "resolved" : conflict.winner == .open ? "open" : "decided" }

    public var json: JSONValue {
        var o = conflict.json.objectValue ?? [:]
        o["key"] = .string(conflict.key)
        o["status"] = .string(status)
        o["decidedIn"] = .string(decidedIn)
        o["position"] = .int(position)
        o["decidedBy"] = .string(decidedBy)
        o["decidedAt"] = .string(decidedAt)
        o["resolutions"] = .array(resolutions.map(\.json))
        return .object(o)
    }
}

/// A conflict re-resolved by hand: a `ConflictResolved` event.
public struct ConflictResolution: Sendable, Hashable {
    public var position: Int64
    public var take: String
    public var value: JSONValue
    public var actor: String
    public var device: String
    public var time: String
    public var log: String

    public var json: JSONValue {
        .object(["position": .int(position), "take": .string(take), "value": value, "actor": .string(actor), "device": .string(device),
                 "time": .string(time), "log": .string(log)])
    }
}

/// What a resolution takes.
public enum ConflictChoice: Sendable, Hashable {
    case local, remote, base
    case value(JSONValue)

    public var name: String {
        switch self {
        case .local: "local"
        case .remote: "remote"
        case .base: "base"
        case .value: "value"
        }
    }
}

extension EditLog {
    /// Every conflict this log holds (its own decisions and those of the logs it imported), in log order.
    public func conflicts() throws(EditLogError) -> [ConflictRecord] {
        try read { db in try Self.conflicts(db, stream: nil) }
    }

    /// The conflicts of one feature's stream (through the stream index), or of the whole log.
    static func conflicts(_ db: Database, stream: String?) throws -> [ConflictRecord] {
            var records: [ConflictRecord] = []
            var index: [String: Int] = [:]
            let types: StatementArguments = [EventType.mergeDecided.rawValue, EventType.conflictResolved.rawValue]
            try EventReading.forEach(db, where: stream == nil ? "type IN (?, ?)" : "stream = ? AND type IN (?, ?)",
                                     arguments: stream.map { [$0] + types } ?? types) { e in
                if e.eventType == .mergeDecided {
                    let d: MergeDecision
                    do throws(EditLogError) { d = try MergeDecision(json: e.payload) } catch { throw error.at("position \(e.position)") }
                    for c in d.conflicts {
                        index[c.id] = records.count
                        records.append(ConflictRecord(conflict: c, decidedIn: d.log, position: e.position, decidedBy: e.actor,
                                                      decidedAt: e.clientTime ?? e.recordedTime, resolutions: []))
                    }
                } else if let id = e.payload["conflictId"]?.stringValue, let i = index[id] {
                    records[i].resolutions.append(ConflictResolution(
                        position: e.position, take: e.payload["take"]?.stringValue ?? "value", value: e.payload["value"] ?? .null,
                        actor: e.actor, device: e.device, time: e.clientTime ?? e.recordedTime, log: e.origin.logId))
                }
            }
            return records
    }

    /// One conflict by id (a prefix of at least 8 characters is enough when it is unique).
    public func conflict(id: String) throws(EditLogError) -> ConflictRecord {
        let all = try conflicts()
        let hits = all.filter { $0.conflict.id == id || (id.count >= 8 && $0.conflict.id.hasPrefix(id.lowercased())) }
        guard let first = hits.first else { throw EditLogError(.notFound, "no conflict \(id); `editlog conflicts list` shows them") }
        guard hits.count == 1 else { throw EditLogError(.invalidInput, "conflict id \(id) is ambiguous (\(hits.count) match); give more of it") }
        return first
    }

    /// Re-resolves a field conflict by hand: a `ConflictResolved` event writing the chosen value (never an edit of
    /// the decision). The value is validated as a pop-up edit of that field would be: its type, domain and
    /// nullability, and for a relationship key, a parent that exists and is not deleted (a resolution never leaves a
    /// related record without its parent). The rules then derive again from the resolved state, as after a
    /// session's commit (`FeatureDerived` events naming the conflict).
    @discardableResult
    public func resolveConflict(id: String, take choice: ConflictChoice, actor: String, device: String, at clientTime: String? = nil) throws(EditLogError) -> RecordedEvent {
        let record = try conflict(id: id)
        let c = record.conflict
        guard c.kind == .field || c.kind == .createCreate, let field = c.field, field != MergeEngine.geometryField else {
            guard choice == .local else {
                throw EditLogError(.unsupported, "conflict \(c.id) is of kind \(c.kind.rawValue); only field conflicts take a value by hand. "
                                   + "--take local closes it as this log holds it; to change the feature, edit or delete it in a session")
            }
            return try closeConflict(c, actor: actor, device: device, at: clientTime)
        }
        guard let layer = schema.layer(id: c.layer), let f = layer.field(field) else {
            throw EditLogError(.corrupt, "conflict \(c.id) names field \(field) of layer \(c.layer), which the schema does not have")
        }
        let raw: JSONValue
        switch choice {
        case .local: raw = c.local.value
        case .remote: raw = c.remote.value
        case .base: raw = c.base
        case .value(let v): raw = v
        }
        let value: JSONValue
        do { value = try FieldValidator.normalize(raw, for: f, layer: layer.name) } catch {
            throw EditLogError(error.kind, "conflict \(c.id), --take \(choice.name): \(error.message)")
        }
        let schema = self.schema
        let geocoder = self.geocoder
        let time = clientTime ?? Timestamp.format(milliseconds: store.clock.now())
        return try writeMapped { db, appender, projector in
            let world = ProjectedState(db: db, schema: schema, projector: projector)
            guard let current = try world.feature(layer: layer.id, globalId: c.globalId) else {
                throw EditLogError(.notFound, "feature \(c.globalId) of conflict \(c.id) is not in this log")
            }
            guard !current.deleted else {
                throw EditLogError(.conflict, "feature \(c.globalId) is deleted; a value cannot be resolved on it")
            }
            try Self.requireParent(of: layer, key: f, value: value, world: world, conflict: c.id, choice: choice)
            let old = current.attributes[f.name] ?? .null
            let payload: JSONValue = .object([
                "conflictId": .string(c.id), "layer": .int(Int64(layer.id)), "globalId": .string(c.globalId), "field": .string(f.name),
                "take": .string(choice.name), "value": value,
                "changes": .object(old == value ? [:] : [f.name: .object(["old": old, "new": value])]),
            ])
            let context = EventContext(actor: actor, device: device, clientTime: time)
            let e = NewEvent(id: appender.ids.next(), stream: StreamName.feature(layer: layer.id, globalId: c.globalId), type: .conflictResolved,
                             payload: payload, context: context, session: nil, cause: Cause.resolution)
            let r = try appender.append(e)
            try projector.apply(r, db)
            // The rules see the resolved value as they see a session's commit: a rollup of the parent it left and of
            // the one it joined, when the field is a child's.
            guard old != value else { return r }
            for p in try RuleEngine(world: world, geocoderOverride: geocoder).derive(after: .committed(layer: layer.id, globalId: c.globalId, kind: .edit,
                                                                                                      before: current.attributes, session: nil)) {
                var derived = p.payload.objectValue ?? [:]
                derived["conflictId"] = .string(c.id)
                let d = NewEvent(id: appender.ids.next(), stream: p.stream, type: p.type, payload: .object(derived), context: context,
                                 session: nil, cause: p.cause)
                try projector.apply(try appender.append(d), db)
            }
            // A parent kept for the record it pointed at before may have nothing to keep it any more.
            try Self.release(deleted: [], left: Self.parentsLeft(layer: Int64(layer.id), changes: payload["changes"], schema: schema), context, db: db,
                             appender: &appender, projector: projector, schema: schema, geocoder: geocoder)
            return r
        }
    }

    /// Closes a conflict that takes no value (update against delete, attachment renames, a geometry created on both
    /// sides) as this log holds it: a `ConflictResolved` without a field and with a null value (`conflicts show` has
    /// the local side), which changes nothing.
    func closeConflict(_ c: Conflict, actor: String, device: String, at clientTime: String?) throws(EditLogError) -> RecordedEvent {
        let time = clientTime ?? Timestamp.format(milliseconds: store.clock.now())
        return try writeMapped { db, appender, projector in
            let payload: JSONValue = .object([
                "conflictId": .string(c.id), "layer": .int(Int64(c.layer)), "globalId": .string(c.globalId), "take": .string(ConflictChoice.local.name),
                "value": .null, "changes": .object([:]),
            ])
            let e = NewEvent(id: appender.ids.next(), stream: StreamName.feature(layer: c.layer, globalId: c.globalId), type: .conflictResolved,
                             payload: payload, context: EventContext(actor: actor, device: device, clientTime: time), session: nil, cause: Cause.resolution)
            let r = try appender.append(e)
            try projector.apply(r, db)
            return r
        }
    }

    /// For a relationship key field of `layer`, the parent `value` points at must exist and not be deleted; null is
    /// refused (the record would lose its parent). Other fields pass.
    static func requireParent(of layer: LayerSchema, key f: FieldSchema, value: JSONValue, world: ProjectedState, conflict id: String,
                              choice: ConflictChoice) throws {
        for rel in layer.relationships where rel.role == .destination && rel.keyField?.lowercased() == f.name.lowercased() {
            guard let (origin, originSide) = world.schema.counterpart(of: rel, in: layer) else { continue }
            guard !value.isNull else {
                throw EditLogError(.validation, "conflict \(id), --take \(choice.name): \(layer.name).\(f.name) is the key of relationship "
                                   + "\"\(rel.name)\"; clearing it would leave the record without its \(origin.name) parent")
            }
            let found: Bool
            if let k = originSide.keyField, k.lowercased() != origin.globalIdField?.lowercased() {
                found = try world.features(layer: origin.id, where: k, equals: value).contains { !$0.deleted }
            } else if let g = value.stringValue.flatMap(GlobalID.normalize), let p = try world.feature(layer: origin.id, globalId: g) {
                found = !p.deleted
            } else {
                found = false
            }
            guard found else {
                let other = try value.stringValue.flatMap(GlobalID.normalize).flatMap { try world.locate(globalId: $0) }.flatMap { $0.id == origin.id ? nil : $0 }
                throw EditLogError(.notFound, "conflict \(id), --take \(choice.name): related record \(origin.name) \(value.stringValue ?? value.serialized()) "
                                   + (other.map { "does not exist: that GlobalID names a record of \($0.name)" } ?? "does not exist in this log (or is deleted)")
                                   + "; a resolution never leaves \(layer.name) \(f.name) pointing at no parent")
            }
        }
    }
}
