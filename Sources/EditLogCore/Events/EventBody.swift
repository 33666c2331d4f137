/// What an event says, typed: each event type's payload decoded once, where every reader finds it. A payload
/// that lacks what its type needs is `.corrupt` naming the event's position (`PayloadReader`); a type this build
/// does not know is `.unknown` and changes nothing. The stored bytes, and so the hash, are never re-encoded from
/// these: an event is written once, from its payload, at append.
public enum EventBody: Sendable {
    case schemaDefined(JSONValue)
    /// A later schema: the whole new definitions (decoded as a `SchemaDefined` payload is) and what changed.
    case schemaChanged(JSONValue)
    case featureBaselined(FeatureBaselined)
    case sessionStarted
    /// A staged step or a session's end other than a commit (`SessionState.apply` reads its payload).
    case sessionStep(EventType)
    case sessionCommitted(SessionCommitted)
    case featureDeleted(FeatureDeleted)
    case featureDerived(FeatureDerived)
    case conflictResolved(ConflictResolved)
    /// A merge decision; `MergeDecision(json:)` in EditLogMerge decodes it (Core knows no merge types).
    case mergeDecided(JSONValue)
    case scriptRecorded(ScriptRecorded)
    case syncPulled(SyncRecorded)
    case syncPushed(SyncRecorded)
    /// A replica operation of `serve` (`ReplicaLog` in EditLogServer reads it); no feature changes.
    case replica(EventType, JSONValue)
    case unknown(String)

    /// The body of `e`; `.corrupt` at its position when the payload is not what its type says.
    public init(_ e: RecordedEvent) throws(EditLogError) {
        guard let type = e.eventType else { self = .unknown(e.type); return }
        let p = e.fields
        switch type {
        case .schemaDefined: self = .schemaDefined(e.payload)
        case .schemaChanged: self = .schemaChanged(e.payload)
        case .featureBaselined: self = .featureBaselined(try FeatureBaselined(p))
        case .sessionStarted: self = .sessionStarted
        case .attributeStaged, .relationStaged, .attachmentStaged, .attachmentRenameStaged, .attachmentDetachStaged, .sessionResumed,
             .sessionCanceled, .sessionAbandoned:
            self = .sessionStep(type)
        case .sessionCommitted: self = .sessionCommitted(try SessionCommitted(p))
        case .featureDeleted: self = .featureDeleted(try FeatureDeleted(p))
        case .featureDerived: self = .featureDerived(try FeatureDerived(p))
        case .conflictResolved: self = .conflictResolved(try ConflictResolved(p))
        case .mergeDecided: self = .mergeDecided(e.payload)
        case .scriptRecorded: self = .scriptRecorded(try ScriptRecorded(p))
        case .syncPulled: self = .syncPulled(try SyncRecorded(p))
        case .syncPushed: self = .syncPushed(try SyncRecorded(p))
        case .replicaCreated, .replicaSynchronized, .replicaUnregistered:
            _ = try p.string("replicaId")
            self = .replica(type, e.payload)
        }
    }

    /// The feature a feature-changing body names (nil for sessions' steps, decisions and system events).
    public var feature: (layer: Int, globalId: String)? {
        switch self {
        case .featureBaselined(let b): (b.layer, b.globalId)
        case .sessionCommitted(let c): (c.layer, c.globalId)
        case .featureDeleted(let d): (d.layer, d.globalId)
        case .featureDerived(let d): (d.layer, d.globalId)
        case .conflictResolved(let r): (r.layer, r.globalId)
        default: nil
        }
    }
}

/// A feature as the baseline (or a service's snapshot) holds it.
public struct FeatureBaselined: Sendable {
    public var layer: Int
    public var globalId: String
    /// Field name (schema spelling) to value.
    public var attributes: [String: JSONValue]
    /// The geometry (nil when absent or null).
    public var geometry: JSONValue?
    /// The payload names a geometry, null included (the merge engine tells a null from none).
    public var namesGeometry: Bool

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); attributes = try p.object("attributes"); geometry = p.optional("geometry")
        namesGeometry = p.payload["geometry"] != nil
    }
}

/// A field's change: the value before and the value after (`{"old": …, "new": …}` in the payload).
public struct FieldChanges: Sendable {
    /// Field name to `{"old", "new"}`, as stored.
    public var raw: [String: JSONValue]
    public init(_ raw: [String: JSONValue]) { self.raw = raw }
    public var isEmpty: Bool { raw.isEmpty }
    public var names: Dictionary<String, JSONValue>.Keys { raw.keys }
    public func new(_ field: String) -> JSONValue? { raw[field].map { $0["new"] ?? .null } }
    /// Each change in no particular order.
    @inlinable public func forEach(_ body: (_ field: String, _ old: JSONValue, _ new: JSONValue) throws -> Void) rethrows {
        for (k, c) in raw { try body(k, c["old"] ?? .null, c["new"] ?? .null) }
    }
    /// The new values, by field.
    public var newValues: [String: JSONValue] { raw.mapValues { $0["new"] ?? .null } }
}

/// The attachments a commit added, renamed and detached.
public struct AttachmentChanges: Sendable {
    public struct Renamed: Sendable { public var attachmentId: String; public var old: JSONValue; public var new: String }
    public struct Removed: Sendable { public var attachmentId: String; public var name: JSONValue }
    public var added: [SessionState.StagedAttachment] = []
    public var renamed: [Renamed] = []
    public var removed: [Removed] = []
    public var isEmpty: Bool { added.isEmpty && renamed.isEmpty && removed.isEmpty }

    init(_ p: PayloadReader) throws(EditLogError) {
        let atts = try p.object("attachments")
        for a in try p.array("added", in: atts, parentKey: "attachments") {
            guard let s = SessionState.StagedAttachment(json: a) else { throw p.corrupt("payload \"attachments.added\" holds an entry that is not an attachment") }
            added.append(s)
        }
        for r in try p.array("renamed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue, let name = r["new"]?.stringValue else {
                throw p.corrupt("payload \"attachments.renamed\" needs attachmentId and new")
            }
            renamed.append(Renamed(attachmentId: id, old: r["old"] ?? .null, new: name))
        }
        for r in try p.array("removed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue else { throw p.corrupt("payload \"attachments.removed\" needs attachmentId") }
            removed.append(Removed(attachmentId: id, name: r["name"] ?? .null))
        }
    }
}

/// A pop-up session's commit: what it changed of its feature and of the feature's attachments.
public struct SessionCommitted: Sendable {
    public var layer: Int
    public var globalId: String
    /// The session created the feature (else it updated it).
    public var isCreate: Bool
    public var changes: FieldChanges
    /// A create's geometry (nil when absent or null).
    public var geometry: JSONValue?
    /// The payload names a geometry, null included (the merge engine tells a null from none).
    public var namesGeometry: Bool
    public var attachments: AttachmentChanges

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId")
        isCreate = try p.string("kind") == "create"
        changes = FieldChanges(try p.object("changes")); geometry = p.optional("geometry")
        namesGeometry = p.payload["geometry"] != nil
        attachments = try AttachmentChanges(p)
    }
}

/// A feature deleted, with every attribute it had.
public struct FeatureDeleted: Sendable {
    public var layer: Int
    public var globalId: String
    public var attributes: [String: JSONValue]

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); attributes = try p.object("attributes")
    }
}

/// Values a rule derived.
public struct FeatureDerived: Sendable {
    public var layer: Int
    public var globalId: String
    public var rule: String?
    public var changes: FieldChanges
    /// The feature or polygon the value came from.
    public var source: String?
    /// Derived again after an import: the feature's editor tracking stays as it is.
    public var keepsTracking: Bool
    /// The conflict whose resolution by hand this value follows.
    public var conflictId: String?

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); changes = FieldChanges(try p.object("changes"))
        rule = p.optional("rule")?.stringValue
        source = p.optional("from")?.stringValue ?? p.optional("polygon")?.stringValue
        keepsTracking = p.payload["keepTracking"] == true
        conflictId = p.optional("conflictId")?.stringValue
    }
}

/// A conflict re-resolved by hand: the chosen value written (or, without a field, the conflict closed as held).
public struct ConflictResolved: Sendable {
    public var layer: Int
    public var globalId: String
    public var conflictId: String?
    /// The field written; nil: the conflict is closed as this log holds it, and nothing changes.
    public var field: String?
    public var take: String?
    /// The value taken.
    public var value: JSONValue
    public var changes: FieldChanges

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId")
        conflictId = p.optional("conflictId")?.stringValue
        field = p.payload["field"] == nil ? nil : p.optional("field")?.stringValue ?? ""
        take = p.optional("take")?.stringValue
        value = p.payload["value"] ?? .null
        changes = field == nil ? FieldChanges([:]) : FieldChanges(try p.object("changes"))
    }
}

/// A script recorded (`editlog record`).
public struct ScriptRecorded: Sendable {
    public var sha256: String
    public var name: String
    public var lines: Int64

    public init(_ p: PayloadReader) throws(EditLogError) {
        sha256 = try p.string("sha256"); name = try p.string("name"); lines = try p.int("lines")
    }
}

/// What a run of `editlog sync` recorded of a service (`SyncPulled`, `SyncPushed`): the generation and edit date a pull
/// reached, the position a push left both sides equal at, and the service's ObjectIDs of features it learned.
public struct SyncRecorded: Sendable {
    public var service: String
    public var serverGen: Int64?
    public var lastEditDate: Int64?
    public var agreedPosition: Int64?
    /// Per layer, the service's ObjectID and the feature's GlobalID.
    public var objectIds: [Int: [(objectId: Int64, globalId: String)]] = [:]
    /// The whole payload (what was sent and answered), for the readers that show it.
    public var payload: JSONValue

    public init(_ p: PayloadReader) throws(EditLogError) {
        payload = p.payload
        service = try p.string("service")
        serverGen = p.optional("serverGen")?.intValue
        lastEditDate = p.optional("lastEditDate")?.intValue
        agreedPosition = p.optional("agreedPosition")?.intValue
        for (layer, pairs) in p.optional("objectIds")?.objectValue ?? [:] {
            guard let l = Int(layer), let list = pairs.arrayValue else { throw p.corrupt("payload \"objectIds.\(layer)\" is not a layer's list") }
            for pair in list {
                guard let a = pair.arrayValue, a.count == 2, let oid = a[0].intValue, let g = a[1].stringValue else {
                    throw p.corrupt("payload \"objectIds.\(layer)\" holds an entry that is not [ObjectID, GlobalID]")
                }
                objectIds[l, default: []].append((oid, g))
            }
        }
    }
}
