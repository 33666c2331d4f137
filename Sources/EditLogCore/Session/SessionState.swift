/// The state of one pop-up edit session, folded from its events (the seed's RichPopupManager state).
public struct SessionState: Sendable, Hashable {
    public enum Kind: String, Sendable { case create, edit }
    public enum Status: String, Sendable { case open, committed, canceled, abandoned }

    public struct StagedAttachment: Sendable, Hashable {
        public var attachmentId: String
        public var name: String
        public var contentType: String
        public var size: Int64
        public var sha256: String
        public var preferredSize: String
        public var json: JSONValue {
            ["attachmentId": .string(attachmentId), "name": .string(name), "contentType": .string(contentType),
             "size": .int(size), "sha256": .string(sha256), "preferredSize": .string(preferredSize)]
        }
        public init?(json: JSONValue) {
            guard let id = json["attachmentId"]?.stringValue, let n = json["name"]?.stringValue,
                  let c = json["contentType"]?.stringValue, let s = json["size"]?.intValue,
                  let h = json["sha256"]?.stringValue else { return nil }
            attachmentId = id; name = n; contentType = c; size = s; sha256 = h
            preferredSize = json["preferredSize"]?.stringValue ?? "actual"
        }
        public init(attachmentId: String, name: String, contentType: String, size: Int64, sha256: String, preferredSize: String) {
            self.attachmentId = attachmentId; self.name = name; self.contentType = contentType
            self.size = size; self.sha256 = sha256; self.preferredSize = preferredSize
        }
    }

    public var id: String
    public var layerId: Int
    public var globalId: String
    public var kind: Kind
    public var status: Status = .open
    /// The actor who opened the session, or resumed it last.
    public var actor: String
    public var device: String
    public var geometry: JSONValue?
    public var parent: ScriptCommand.ParentRef?
    /// Field name (schema spelling) to staged value, in the order staged.
    public var staged: [(field: String, value: JSONValue)] = []
    /// Relationship id to the related record's GlobalID.
    public var relations: [Int: String] = [:]
    public var attachmentsAdded: [StagedAttachment] = []
    public var renames: [String: String] = [:]
    public var detaches: [String] = []
    /// The position of the session's `SessionStarted` event (where errors about the session point).
    public var startedPosition: Int64 = 0

    public init(id: String, layerId: Int, globalId: String, kind: Kind, actor: String, device: String) {
        self.id = id; self.layerId = layerId; self.globalId = globalId; self.kind = kind; self.actor = actor; self.device = device
    }

    public static func == (a: SessionState, b: SessionState) -> Bool { a.startedPosition == b.startedPosition && a.json == b.json }
    public func hash(into h: inout Hasher) { h.combine(startedPosition); h.combine(json) }

    public func stagedValue(_ field: String) -> JSONValue? {
        staged.last { $0.field == field }?.value
    }

    /// The latest value per field, in first-staged order.
    public var effectiveStaged: [(field: String, value: JSONValue)] {
        var seen: [String: Int] = [:]
        var out: [(String, JSONValue)] = []
        for (f, v) in staged {
            if let i = seen[f] { out[i].1 = v } else { seen[f] = out.count; out.append((f, v)) }
        }
        return out.map { (field: $0.0, value: $0.1) }
    }

    /// Folds one of this session's events (a step or its end; anything else is `.corrupt`, the caller adds the position).
    public mutating func apply(_ body: EventBody, actor: String, device: String) throws(EditLogError) {
        switch body {
        case .attributeStaged(let a): staged.append((a.field, a.value))
        case .relationStaged(let r): relations[r.relationship] = r.globalId
        case .attachmentStaged(let a): attachmentsAdded.append(a.attachment)
        case .attachmentRenameStaged(let r):
            if let i = attachmentsAdded.firstIndex(where: { $0.attachmentId == r.attachmentId }) { attachmentsAdded[i].name = r.name } else { renames[r.attachmentId] = r.name }
        case .attachmentDetachStaged(let d):
            let id = d.attachmentId
            if let i = attachmentsAdded.firstIndex(where: { $0.attachmentId == id }) { attachmentsAdded.remove(at: i) }
            else { detaches.append(id); renames[id] = nil }
        case .sessionResumed:
            self.actor = actor; self.device = device
        case .sessionCommitted: status = .committed
        case .sessionCanceled: status = .canceled
        case .sessionAbandoned: status = .abandoned
        case .schemaDefined, .schemaChanged, .featureBaselined, .sessionStarted, .featureDeleted, .featureDerived, .scriptRecorded, .mergeDecided, .conflictResolved,
             .syncPulled, .syncPushed, .replicaCreated, .replicaSynchronized, .replicaUnregistered, .unknown:
            throw EditLogError(.corrupt, "\(body.typeName) event: is not a step of an open session, yet names session \(id)")
        }
    }

    /// Starts the fold from a session's start.
    public init(started s: SessionStarted, session: String, actor: String, device: String, position: Int64) {
        self.init(id: session, layerId: s.layer, globalId: s.globalId, kind: s.kind, actor: actor, device: device)
        startedPosition = position
        geometry = s.geometry
        parent = s.parent.map { .init(relationship: String($0.relationship), globalId: $0.globalId) }
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id), "layer": .int(Int64(layerId)), "globalId": .string(globalId), "kind": .string(kind.rawValue),
            "status": .string(status.rawValue), "actor": .string(actor), "device": .string(device),
            "staged": .array(staged.map { .object(["field": .string($0.field), "value": $0.value]) }),
            "relations": .object(Dictionary(uniqueKeysWithValues: relations.map { (String($0.key), JSONValue.string($0.value)) })),
            "attachmentsAdded": .array(attachmentsAdded.map(\.json)),
            "renames": .object(renames.mapValues { .string($0) }),
            "detaches": .array(detaches.map { .string($0) }),
        ]
        if let geometry { o["geometry"] = geometry }
        if let parent { o["parent"] = ["relationship": .string(parent.relationship), "globalId": .string(parent.globalId)] }
        return .object(o)
    }

    public init?(json: JSONValue) {
        guard let id = json["id"]?.stringValue, let l = json["layer"]?.intValue, let g = json["globalId"]?.stringValue,
              let k = json["kind"]?.stringValue.flatMap(Kind.init(rawValue:)),
              let s = json["status"]?.stringValue.flatMap(Status.init(rawValue:)),
              let a = json["actor"]?.stringValue, let d = json["device"]?.stringValue else { return nil }
        self.init(id: id, layerId: Int(l), globalId: g, kind: k, actor: a, device: d)
        status = s
        geometry = json["geometry"]
        if let p = json["parent"], let r = p["relationship"]?.stringValue, let pg = p["globalId"]?.stringValue { parent = .init(relationship: r, globalId: pg) }
        staged = (json["staged"]?.arrayValue ?? []).compactMap { e in e["field"]?.stringValue.map { ($0, e["value"] ?? .null) } }
        for (k, v) in json["relations"]?.objectValue ?? [:] { if let r = Int(k), let g = v.stringValue { relations[r] = g } }
        attachmentsAdded = (json["attachmentsAdded"]?.arrayValue ?? []).compactMap(StagedAttachment.init(json:))
        for (k, v) in json["renames"]?.objectValue ?? [:] { renames[k] = v.stringValue }
        detaches = (json["detaches"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}
