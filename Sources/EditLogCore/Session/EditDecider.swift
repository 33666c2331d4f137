import Foundation

/// The edit-session state machine: given the current state (an `CurrentState`) and one step, either the
/// events that record it or an error that says why not. Pure: it reads the world, never writes.
///
/// Rules (each has a test): Create/Update/Delete capabilities; a pop-up is needed to edit; one open
/// session per feature; one-to-many children change only while their parent has no open session;
/// a composite many-to-one must be set at finish; related records must exist; attachments only where
/// `hasAttachments`; GUID, ObjectID, GlobalID and editor-tracking fields are read-only; geometry, blob,
/// raster and XML fields are unsupported.
public struct EditDecider {
    public let world: any CurrentState
    public var schema: ServiceSchema { world.schema }

    public init(world: any CurrentState) { self.world = world }

    // MARK: Lookups

    func layer(_ ref: String) throws(EditLogError) -> LayerSchema { try schema.requireLayer(ref) }

    func gid(_ s: String, _ what: String = "globalId") throws(EditLogError) -> String {
        guard let g = GlobalID.normalize(s) else { throw EditLogError(.invalidInput, "\(what) \"\(s.prefix(60))\" is not a GUID") }
        return g
    }

    func reading<T>(_ body: () throws -> T) throws(EditLogError) -> T {
        do { return try body() } catch { throw world.describe(error) }
    }

    /// The layer of a session read back from the log. The session projection is not covered by the hash chain,
    /// so a layer the schema does not have is `.corrupt`, pointing at the session's first event.
    func layer(of s: SessionState) throws(EditLogError) -> LayerSchema {
        guard let l = schema.layer(id: s.layerId) else {
            throw EditLogError(.corrupt, "session \(s.id) names layer \(s.layerId), which the schema does not have; the session projection was altered: run `editlog verify`, then `editlog rebuild`",
                               at: "position \(s.startedPosition)")
        }
        return l
    }

    func requirePopup(_ l: LayerSchema) throws(EditLogError) {
        guard l.popup != nil else {
            throw EditLogError(.validation, "layer \(l.name) has no pop-up in the web map, so it cannot be edited")
        }
    }

    func requireGlobalIds(_ l: LayerSchema) throws(EditLogError) {
        guard l.globalIdField != nil else {
            throw EditLogError(.validation, "layer \(l.name) has no GlobalID field; EditLog keys every feature on its GlobalID")
        }
    }

    func capabilityError(_ l: LayerSchema, _ verb: String) -> EditLogError {
        EditLogError(.validation, "layer \(l.name) does not allow \(verb) (capabilities: \(l.capabilities.names.joined(separator: ",")))")
    }

    /// The session a step applies to: the named one, or the actor's only open session.
    public func resolveSession(_ id: String?, actor: String) throws(EditLogError) -> SessionState {
        if let id {
            guard let s = try reading({ try world.session(id: id) }) else { throw EditLogError(.notFound, "no session \"\(id)\"") }
            guard s.status == .open else { throw EditLogError(.conflict, "session \"\(id)\" is \(s.status.rawValue), not open") }
            return s
        }
        let open = try reading { try world.openSessions(actor: actor) }
        guard let s = open.first else { throw EditLogError(.conflict, "\(actor) has no open session; start one with create or edit") }
        guard open.count == 1 else {
            throw EditLogError(.conflict, "\(actor) has \(open.count) open sessions (\(open.map(\.id).joined(separator: ", "))); name one with \"session\"")
        }
        return s
    }

    /// The many-to-one side (this layer is the destination) of a relationship, with its origin.
    func manyToOne(_ l: LayerSchema, _ ref: String) throws(EditLogError) -> (rel: RelationshipSchema, origin: LayerSchema, originSide: RelationshipSchema, key: FieldSchema) {
        guard let rel = l.relationship(ref) else {
            throw EditLogError(.invalidInput, "layer \(l.name) has no relationship \"\(ref)\"")
        }
        guard let (origin, originSide) = schema.counterpart(of: rel, in: l) else {
            throw EditLogError(.invalidInput, "relationship \"\(ref)\" points at layer \(rel.relatedTableId), which the service does not describe")
        }
        guard rel.role == .destination else {
            throw EditLogError(.validation, "relationship \"\(ref)\" is one-to-many from \(l.name): add \(origin.name) records in their own sessions")
        }
        guard let key = l.field(named: rel.keyField) else {
            throw EditLogError(.invalidInput, "relationship \"\(ref)\" has no key field on \(l.name)")
        }
        return (rel, origin, originSide, key)
    }

    /// The key value a child stores to point at `parent`: the origin's key field, or its GlobalID.
    func keyValue(of parent: FeatureSnapshot, originSide: RelationshipSchema, origin: LayerSchema) -> JSONValue {
        ServiceSchema.keyValue(of: parent, originSide: originSide, origin: origin)
    }

    /// Parents of a feature across its many-to-one (destination-side, one-to-many) relationships.
    func parents(of layer: LayerSchema, attributes: [String: JSONValue]) throws(EditLogError) -> [(LayerSchema, FeatureSnapshot)] {
        var out: [(LayerSchema, FeatureSnapshot)] = []
        for rel in layer.relationships where rel.role == .destination {
            guard let key = layer.field(named: rel.keyField), let value = attributes[key.name], !value.isNull,
                  let (origin, originSide) = schema.counterpart(of: rel, in: layer) else { continue }
            let found: [FeatureSnapshot]
            if let k = originSide.keyField, k.lowercased() != origin.globalIdField?.lowercased() {
                found = try reading { try world.features(layer: origin.id, where: k, equals: value) }
            } else if let g = value.stringValue.flatMap(GlobalID.normalize), let f = try reading({ try world.feature(layer: origin.id, globalId: g) }), !f.deleted {
                found = [f]
            } else { found = [] }
            for f in found { out.append((origin, f)) }
        }
        return out
    }

    /// The seed's view-mode rule: a parent's one-to-many children change only while the parent has no open session.
    func requireParentsIdle(_ parents: [(LayerSchema, FeatureSnapshot)], child: String) throws(EditLogError) {
        for (pl, p) in parents {
            if let s = try reading({ try world.openSession(layer: pl.id, globalId: p.globalId) }) {
                throw EditLogError(.conflict, "\(child): its parent \(pl.name) \(p.globalId) has an open session \(s.id) (\(s.actor)); related records change only while the parent has no open session")
            }
        }
    }

    /// Whether a pop-up may stage `name`, and the field.
    public func stageableField(_ l: LayerSchema, _ name: String) throws(EditLogError) -> FieldSchema {
        guard let f = l.field(name) else {
            throw EditLogError(.invalidInput, "unknown field \"\(name)\" on layer \(l.name)")
        }
        if f.type.isUnsupportedInPopup {
            throw EditLogError(.validation, "field \(l.name).\(f.name) has type \(f.type.esriName), which a pop-up cannot edit (geometry, raster, XML and blob are unsupported)")
        }
        switch f.type {
        case .oid, .globalID, .guid:
            throw EditLogError(.validation, "field \(l.name).\(f.name) (\(f.type.esriName)) is read-only in a pop-up\(f.type == .guid ? "; change relationships with relate or parent" : "")")
        case .unknown(let n):
            throw EditLogError(.validation, "field \(l.name).\(f.name) has type \(n), unknown to EditLog, so it is read-only")
        default: break
        }
        if l.isEditorTrackingField(f.name) {
            throw EditLogError(.validation, "field \(l.name).\(f.name) is an editor-tracking field and read-only")
        }
        guard f.editable else { throw EditLogError(.validation, "field \(l.name).\(f.name) is read-only in the service") }
        guard let popup = l.popup else { throw EditLogError(.validation, "layer \(l.name) has no pop-up, so it cannot be edited") }
        guard popup.fieldInfo(f.name)?.isEditable == true else {
            throw EditLogError(.validation, "field \(l.name).\(f.name) is not editable in the pop-up")
        }
        return f
    }

    static func validAttachmentName(_ n: String) -> String? {
        if n.isEmpty { return "attachment name is empty" }
        if n.count > 255 { return "attachment name is longer than 255 characters" }
        if n.contains("/") || n.contains("\\") { return "attachment name \"\(n.prefix(60))\" contains a path separator" }
        if n == "." || n == ".." || n.contains("..") { return "attachment name \"\(n.prefix(60))\" contains \"..\"" }
        if n.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "attachment name contains a control character" }
        return nil
    }

    // MARK: Steps

    public func create(sessionId: String, layer ref: String, globalId rawGid: String, geometry: JSONValue?,
                       attributes: [String: JSONValue], parent: ScriptCommand.ParentRef?, actor: String) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(ref)
        guard l.capabilities.canCreate else { throw capabilityError(l, "Create") }
        try requirePopup(l)
        try requireGlobalIds(l)
        let g = try gid(rawGid)
        if try reading({ try world.featureExists(globalId: g) }) { throw EditLogError(.conflict, "a feature with GlobalID \(g) already exists") }
        if let s = try reading({ try world.session(id: sessionId) }) { throw EditLogError(.conflict, "session id \"\(sessionId)\" is already used (\(s.status.rawValue))") }
        if let s = try reading({ try world.openSession(layer: l.id, globalId: g) }) {
            throw EditLogError(.conflict, "\(l.name) \(g) already has an open session \(s.id) (\(s.actor))")
        }
        var started = SessionStarted(layer: l.id, globalId: g, kind: .create)
        if let gt = l.geometryType, !l.isTable {
            guard let geometry else { throw EditLogError(.validation, "a new \(l.name) feature needs a geometry (\(gt))") }
            try Geometry.validate(geometry, geometryType: gt, at: "\(l.name) geometry")
            started.geometry = geometry
        } else if geometry != nil {
            throw EditLogError(.validation, "\(l.name) is a table: its records have no geometry")
        }
        if let parent {
            let (rel, origin, _, _) = try manyToOne(l, parent.relationship)
            guard rel.cardinality != .manyToMany else { throw EditLogError(.validation, "relationship \"\(parent.relationship)\" is many-to-many") }
            let pg = try gid(parent.globalId, "parent globalId")
            guard let p = try reading({ try world.feature(layer: origin.id, globalId: pg) }), !p.deleted else {
                throw EditLogError(.notFound, "parent \(origin.name) \(pg) does not exist")
            }
            try requireParentsIdle([(origin, p)], child: "cannot add a \(l.name) record")
            started.parent = (rel.id, pg)
        }
        let stream = StreamName.feature(layer: l.id, globalId: g)
        var events = [PendingEvent(stream: stream, started, session: sessionId, cause: Cause.session)]
        for name in attributes.keys.sorted() {
            let f = try stageableField(l, name)
            let v = try FieldValidator.normalize(attributes[name] ?? .null, for: f, layer: l.name)
            events.append(PendingEvent(stream: stream, AttributeStaged(field: f.name, value: v), session: sessionId, cause: Cause.session))
        }
        return events
    }

    public func edit(sessionId: String, layer ref: String, globalId rawGid: String) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(ref)
        guard l.capabilities.canUpdate else { throw capabilityError(l, "Update") }
        try requirePopup(l)
        try requireGlobalIds(l)
        let g = try gid(rawGid)
        guard let f = try reading({ try world.feature(layer: l.id, globalId: g) }), !f.deleted else {
            throw EditLogError(.notFound, "\(l.name) \(g) does not exist")
        }
        if let s = try reading({ try world.session(id: sessionId) }) { throw EditLogError(.conflict, "session id \"\(sessionId)\" is already used (\(s.status.rawValue))") }
        if let s = try reading({ try world.openSession(layer: l.id, globalId: g) }) {
            throw EditLogError(.conflict, "\(l.name) \(g) already has an open session \(s.id) (\(s.actor)); one open session per feature")
        }
        try requireParentsIdle(try parents(of: l, attributes: f.attributes), child: "cannot edit \(l.name) \(g)")
        return [PendingEvent(stream: StreamName.feature(layer: l.id, globalId: g), SessionStarted(layer: l.id, globalId: g, kind: .edit), session: sessionId, cause: Cause.session)]
    }

    public func set(_ s: SessionState, field: String, value: JSONValue) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(of: s)
        let f = try stageableField(l, field)
        let v = try FieldValidator.normalize(value, for: f, layer: l.name)
        return [PendingEvent(stream: StreamName.feature(layer: l.id, globalId: s.globalId), AttributeStaged(field: f.name, value: v), session: s.id, cause: Cause.session)]
    }

    public func relate(_ s: SessionState, relationship: String, globalId rawGid: String) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(of: s)
        let (rel, origin, _, _) = try manyToOne(l, relationship)
        let g = try gid(rawGid)
        guard let p = try reading({ try world.feature(layer: origin.id, globalId: g) }), !p.deleted else {
            throw EditLogError(.notFound, "related record \(origin.name) \(g) does not exist")
        }
        return [PendingEvent(stream: StreamName.feature(layer: l.id, globalId: s.globalId), RelationStaged(relationship: rel.id, globalId: g), session: s.id, cause: Cause.session)]
    }

    public func attach(_ s: SessionState, attachmentId: String, name: String, contentType: String, data: [UInt8], preferredSize: String) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(of: s)
        guard l.hasAttachments else { throw EditLogError(.validation, "layer \(l.name) does not support attachments (hasAttachments is false)") }
        let a = try gid(attachmentId, "attachmentId")
        if let msg = Self.validAttachmentName(name) { throw EditLogError(.validation, msg) }
        guard !contentType.isEmpty, contentType.count <= 255, contentType.contains("/") else {
            throw EditLogError(.validation, "contentType \"\(contentType.prefix(60))\" is not a MIME type")
        }
        if try reading({ try world.attachment(globalId: a) }) != nil || s.attachmentsAdded.contains(where: { $0.attachmentId == a }) {
            throw EditLogError(.conflict, "attachment \(a) already exists")
        }
        let sha = Hex.encode(EventHash.sha256(data))
        let staged = SessionState.StagedAttachment(attachmentId: a, name: name, contentType: contentType, size: Int64(data.count), sha256: sha, preferredSize: preferredSize)
        return [PendingEvent(stream: StreamName.feature(layer: l.id, globalId: s.globalId), AttachmentStaged(staged), session: s.id, cause: Cause.session, blob: data)]
    }

    func existingAttachment(_ s: SessionState, _ rawId: String) throws(EditLogError) -> String {
        let a = try gid(rawId, "attachmentId")
        if s.attachmentsAdded.contains(where: { $0.attachmentId == a }) { return a }
        guard let att = try reading({ try world.attachment(globalId: a) }), !att.deleted, !s.detaches.contains(a) else {
            throw EditLogError(.notFound, "attachment \(a) does not exist on this feature")
        }
        guard att.parentGlobalId == s.globalId else {
            throw EditLogError(.validation, "attachment \(a) belongs to \(att.parentGlobalId), not to \(s.globalId)")
        }
        return a
    }

    public func renameAttachment(_ s: SessionState, attachmentId: String, name: String) throws(EditLogError) -> [PendingEvent] {
        let a = try existingAttachment(s, attachmentId)
        if let msg = Self.validAttachmentName(name) { throw EditLogError(.validation, msg) }
        return [PendingEvent(stream: StreamName.feature(layer: s.layerId, globalId: s.globalId), AttachmentRenameStaged(attachmentId: a, name: name), session: s.id, cause: Cause.session)]
    }

    public func detach(_ s: SessionState, attachmentId: String) throws(EditLogError) -> [PendingEvent] {
        let a = try existingAttachment(s, attachmentId)
        return [PendingEvent(stream: StreamName.feature(layer: s.layerId, globalId: s.globalId), AttachmentDetachStaged(attachmentId: a), session: s.id, cause: Cause.session)]
    }

    public func cancel(_ s: SessionState) -> [PendingEvent] {
        [PendingEvent(stream: StreamName.feature(layer: s.layerId, globalId: s.globalId), SessionCanceled(discarded: Int64(s.staged.count + s.relations.count + s.attachmentsAdded.count + s.renames.count + s.detaches.count)),
                      session: s.id, cause: Cause.session)]
    }

    public func abandon(_ s: SessionState) -> [PendingEvent] {
        [PendingEvent(stream: StreamName.feature(layer: s.layerId, globalId: s.globalId), SessionAbandoned(openedBy: s.actor), session: s.id, cause: Cause.session)]
    }

    public func resume(_ s: SessionState) -> [PendingEvent] {
        [PendingEvent(stream: StreamName.feature(layer: s.layerId, globalId: s.globalId), SessionResumed(previousActor: s.actor, previousDevice: s.device), session: s.id, cause: Cause.session)]
    }

    /// Validates everything (aggregating every problem, like `RichPopupManagerError.invalidPopup`) and commits:
    /// many-to-one changes, the parent link, staged attachments, attributes — one event.
    public func finish(_ s: SessionState) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(of: s)
        var errors: [EditLogError] = []
        let current: FeatureSnapshot?
        if s.kind == .edit {
            guard let f = try reading({ try world.feature(layer: l.id, globalId: s.globalId) }), !f.deleted else {
                throw EditLogError(.notFound, "\(l.name) \(s.globalId) was deleted while the session was open")
            }
            current = f
        } else { current = nil }
        let old = current?.attributes ?? [:]
        var new = old
        for (f, v) in s.effectiveStaged { new[f] = v }
        // Many-to-one changes (species) and the parent link (inspection under a tree).
        var links: [(rel: String, gid: String)] = s.relations.sorted { $0.key < $1.key }.map { (String($0.key), $0.value) }
        if let p = s.parent { links.append((p.relationship, p.globalId)) }
        for (relRef, g) in links {
            do throws(EditLogError) {
                let (_, origin, originSide, key) = try manyToOne(l, relRef)
                guard let p = try reading({ try world.feature(layer: origin.id, globalId: g) }), !p.deleted else {
                    throw EditLogError(.notFound, "related record \(origin.name) \(g) no longer exists")
                }
                new[key.name] = keyValue(of: p, originSide: originSide, origin: origin)
            } catch { errors.append(error) }
        }
        if s.kind == .create {
            for f in l.attributeFields where new[f.name] == nil {
                guard let d = f.defaultValue else { continue }
                do throws(EditLogError) { new[f.name] = try FieldValidator.normalize(d, for: f, layer: l.name) } catch {
                    errors.append(EditLogError(.validation, "the service's default value \(d.serialized().prefix(40)) for \(l.name).\(f.name) is refused by the field (\(error.message)); set the field explicitly"))
                }
            }
            for f in l.attributeFields where !f.nullable && (new[f.name] ?? .null).isNull && !l.isEditorTrackingField(f.name) {
                errors.append(EditLogError(.validation, "field \(l.name).\(f.name) is required"))
            }
        }
        // A composite many-to-one must be set.
        for rel in l.relationships where rel.role == .destination && rel.composite {
            if let key = l.field(named: rel.keyField), (new[key.name] ?? .null).isNull {
                let originName = schema.layer(id: rel.relatedTableId)?.name ?? "layer \(rel.relatedTableId)"
                errors.append(EditLogError(.validation, "composite relationship \"\(rel.name.isEmpty ? String(rel.id) : rel.name)\" to \(originName) must be set before finishing (missing \(key.name))"))
            }
        }
        do throws(EditLogError) {
            try requireParentsIdle(try parents(of: l, attributes: new), child: "cannot save \(l.name) \(s.globalId)")
        } catch { errors.append(error) }
        for a in s.detaches {
            if let att = try reading({ try world.attachment(globalId: a) }), att.deleted { errors.append(EditLogError(.notFound, "attachment \(a) was already deleted")) }
        }
        if !errors.isEmpty {
            throw EditLogError.aggregate(errors, context: "cannot finish session \(s.id) on \(l.name) \(s.globalId)")
        }
        var changes = FieldChanges()
        for f in l.attributeFields {
            let o = old[f.name] ?? .null, n = new[f.name] ?? .null
            if s.kind == .create ? !n.isNull : o != n { changes[f.name] = .init(old: o, new: n) }
        }
        var attachments = AttachmentChanges(added: s.attachmentsAdded)
        for (id, name) in s.renames.sorted(by: { $0.key < $1.key }) {
            let oldName = try reading { try world.attachment(globalId: id) }?.name
            attachments.renamed.append(.init(attachmentId: id, old: JSONValue(oldName), new: name))
        }
        for id in s.detaches {
            let att = try reading { try world.attachment(globalId: id) }
            attachments.removed.append(.init(attachmentId: id, name: JSONValue(att?.name)))
        }
        let commit = SessionCommitted(layer: l.id, globalId: s.globalId, isCreate: s.kind == .create, changes: changes, geometry: s.geometry,
                                      attachments: attachments)
        return [PendingEvent(stream: StreamName.feature(layer: l.id, globalId: s.globalId), commit, session: s.id, cause: Cause.session)]
    }

    /// Deletes a feature (outside a session) and, through composite relationships, its children.
    public func delete(layer ref: String, globalId rawGid: String, session: String?) throws(EditLogError) -> [PendingEvent] {
        let l = try layer(ref)
        guard l.capabilities.canDelete else { throw capabilityError(l, "Delete") }
        try requirePopup(l)
        try requireGlobalIds(l)
        let g = try gid(rawGid)
        guard let f = try reading({ try world.feature(layer: l.id, globalId: g) }), !f.deleted else {
            throw EditLogError(.notFound, "\(l.name) \(g) does not exist")
        }
        try requireParentsIdle(try parents(of: l, attributes: f.attributes), child: "cannot delete \(l.name) \(g)")
        var out: [PendingEvent] = []
        var visited = Set<String>()
        try cascadeDelete(l, f, cause: Cause.delete, session: session, into: &out, visited: &visited)
        return out
    }

    func cascadeDelete(_ l: LayerSchema, _ f: FeatureSnapshot, cause: String, session: String?, into out: inout [PendingEvent], visited: inout Set<String>) throws(EditLogError) {
        guard visited.insert(f.globalId).inserted else { return }
        if let s = try reading({ try world.openSession(layer: l.id, globalId: f.globalId) }) {
            throw EditLogError(.conflict, "\(l.name) \(f.globalId) has an open session \(s.id) (\(s.actor)); finish, cancel or abandon it before deleting")
        }
        out.append(PendingEvent(stream: StreamName.feature(layer: l.id, globalId: f.globalId), FeatureDeleted(layer: l.id, globalId: f.globalId, attributes: f.attributes),
                                session: session, cause: cause))
        for rel in l.relationships where rel.role == .origin && rel.composite {
            guard let (child, childSide) = schema.counterpart(of: rel, in: l), let fk = childSide.keyField else { continue }
            let key = keyValue(of: f, originSide: rel, origin: l)
            for c in try reading({ try world.features(layer: child.id, where: fk, equals: key) }) {
                try cascadeDelete(child, c, cause: Cause.cascade(from: f.globalId), session: session, into: &out, visited: &visited)
            }
        }
    }
}
