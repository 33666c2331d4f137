import EditLogCore
import EditLogMerge
import EditLogProjections
import Foundation

/// A conflict re-resolved by hand: a `ConflictResolved` event writing the chosen value (never an edit of the decision).
/// The value is validated as a pop-up edit of that field would be: its type, domain and nullability, and for a
/// relationship key, a parent that exists and is not deleted (a resolution never leaves a related record without its
/// parent). The rules then derive again from the resolved state, as after a session's commit (`FeatureDerived` events
/// naming the conflict), and a parent kept for the record's earlier key may be released. A conflict that takes no value
/// (update against delete, attachment renames, a geometry created on both sides) is only closed, as this log holds it:
/// a `ConflictResolved` without a field and with a null value, which changes nothing.
public struct ConflictResolver {
    public let conflict: Conflict
    public let choice: ConflictChoice
    /// Who resolves, where and when (the event's context).
    public let context: EventContext
    /// The field the resolution writes and its value, normalized; nil when it only closes the conflict.
    let write: (layer: LayerSchema, field: FieldSchema, value: JSONValue)?

    /// Checks what needs no log: a choice the conflict's kind takes, a field the schema has, a value the field takes.
    public init(_ c: Conflict, take choice: ConflictChoice, schema: ServiceSchema, context: EventContext) throws(EditLogError) {
        self.conflict = c
        self.choice = choice
        self.context = context
        guard let field = c.resolvableField else {
            guard choice == .local else {
                throw EditLogError(.unsupported, "conflict \(c.id) is of kind \(c.kind.rawValue); only field conflicts take a value by hand. "
                                   + "--take local closes it as this log holds it; to change the feature, edit or delete it in a session")
            }
            write = nil
            return
        }
        guard let layer = schema.layer(id: c.layer), let f = layer.field(field) else {
            throw EditLogError(.corrupt, "conflict \(c.id) names field \(field) of layer \(c.layer), which the schema does not have")
        }
        let value: JSONValue
        do { value = try FieldValidator.normalize(choice.value(in: c), for: f, layer: layer.name) } catch {
            throw EditLogError(error.kind, "conflict \(c.id), --take \(choice.name): \(error.message)")
        }
        write = (layer, f, value)
    }

    /// Records the resolution in `unit`: emit, derive, release. Returns the `ConflictResolved` event.
    public func resolve(in unit: inout WriteUnit) throws -> RecordedEvent {
        let c = conflict
        guard let (layer, f, value) = write else {
            let closed = ConflictResolved(layer: c.layer, globalId: c.globalId, conflictId: c.id, field: nil, take: ConflictChoice.local.name, value: .null,
                                          changes: FieldChanges())
            return try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.feature(layer: c.layer, globalId: c.globalId), body: closed.body,
                                          context: context, session: nil, cause: Cause.resolution))
        }
        let world = unit.world
        guard let current = try world.feature(layer: layer.id, globalId: c.globalId) else {
            throw EditLogError(.notFound, "feature \(c.globalId) of conflict \(c.id) is not in this log")
        }
        guard !current.deleted else {
            throw EditLogError(.conflict, "feature \(c.globalId) is deleted; a value cannot be resolved on it")
        }
        try Self.requireParent(of: layer, key: f, value: value, world: world, conflict: c.id, choice: choice)
        let old = current.attributes[f.name] ?? .null
        let resolved = ConflictResolved(layer: layer.id, globalId: c.globalId, conflictId: c.id, field: f.name, take: choice.name, value: value,
                                        changes: FieldChanges(old == value ? [:] : [f.name: .init(old: old, new: value)]))
        let r = try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.feature(layer: layer.id, globalId: c.globalId), body: resolved.body,
                                       context: context, session: nil, cause: Cause.resolution))
        // The rules see the resolved value as they see a session's commit: a rollup of the parent it left and of
        // the one it joined, when the field is a child's.
        guard old != value else { return r }
        try unit.derive(after: .committed(layer: layer.id, globalId: c.globalId, kind: .edit, before: current.attributes, session: nil),
                        context: context) { p in
            var p = p
            if case .featureDerived(var d) = p.body {
                d.conflictId = c.id
                p.body = d.body
            }
            p.session = nil
            return p
        }
        // A parent kept for the record it pointed at before may have nothing to keep it any more.
        try unit.release(deleted: [], left: WriteUnit.parentsLeft(layer: layer.id, changes: resolved.changes, schema: unit.schema), context: context)
        return r
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
