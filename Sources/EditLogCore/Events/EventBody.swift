/// What an event says, typed: one case per event type, each holding that type's `EventPayload`, the one place its
/// payload is read from and written to canonical bytes. A type this build does not know is `.unknown` (its payload
/// as stored) and changes nothing. Stored bytes are never re-encoded from a body: an event is written once, at append.
public enum EventBody: Sendable {
    // The rare, large bodies are boxed (`indirect`), so the frequent ones set the enum's size.
    indirect case schemaDefined(SchemaDefined)
    indirect case schemaChanged(SchemaChanged)
    case featureBaselined(FeatureBaselined)
    case sessionStarted(SessionStarted)
    case attributeStaged(AttributeStaged)
    case relationStaged(RelationStaged)
    case attachmentStaged(AttachmentStaged)
    case attachmentRenameStaged(AttachmentRenameStaged)
    case attachmentDetachStaged(AttachmentDetachStaged)
    case sessionResumed(SessionResumed)
    case sessionCommitted(SessionCommitted)
    case sessionCanceled(SessionCanceled)
    case sessionAbandoned(SessionAbandoned)
    case featureDeleted(FeatureDeleted)
    case featureDerived(FeatureDerived)
    case scriptRecorded(ScriptRecorded)
    indirect case mergeDecided(MergeDecision)
    indirect case conflictResolved(ConflictResolved)
    indirect case syncPulled(SyncPulled)
    indirect case syncPushed(SyncPushed)
    indirect case replicaCreated(ReplicaCreated)
    indirect case replicaSynchronized(ReplicaSynchronized)
    indirect case replicaUnregistered(ReplicaUnregistered)
    case unknown(type: String, payload: JSONValue)

    /// Reads a stored payload of type `type`; `.corrupt` at `position` when it is not what its type says.
    public init(type: String, payload: JSONValue, position: Int64? = nil) throws(EditLogError) {
        guard let t = EventType(rawValue: type) else { self = .unknown(type: type, payload: payload); return }
        let p = PayloadReader(payload, type: type, position: position)
        switch t {
        case .schemaDefined: self = .schemaDefined(try SchemaDefined(p))
        case .schemaChanged: self = .schemaChanged(try SchemaChanged(p))
        case .featureBaselined: self = .featureBaselined(try FeatureBaselined(p))
        case .sessionStarted: self = .sessionStarted(try SessionStarted(p))
        case .attributeStaged: self = .attributeStaged(try AttributeStaged(p))
        case .relationStaged: self = .relationStaged(try RelationStaged(p))
        case .attachmentStaged: self = .attachmentStaged(try AttachmentStaged(p))
        case .attachmentRenameStaged: self = .attachmentRenameStaged(try AttachmentRenameStaged(p))
        case .attachmentDetachStaged: self = .attachmentDetachStaged(try AttachmentDetachStaged(p))
        case .sessionResumed: self = .sessionResumed(try SessionResumed(p))
        case .sessionCommitted: self = .sessionCommitted(try SessionCommitted(p))
        case .sessionCanceled: self = .sessionCanceled(try SessionCanceled(p))
        case .sessionAbandoned: self = .sessionAbandoned(try SessionAbandoned(p))
        case .featureDeleted: self = .featureDeleted(try FeatureDeleted(p))
        case .featureDerived: self = .featureDerived(try FeatureDerived(p))
        case .scriptRecorded: self = .scriptRecorded(try ScriptRecorded(p))
        case .mergeDecided: self = .mergeDecided(try MergeDecision(p))
        case .conflictResolved: self = .conflictResolved(try ConflictResolved(p))
        case .syncPulled: self = .syncPulled(try SyncPulled(p))
        case .syncPushed: self = .syncPushed(try SyncPushed(p))
        case .replicaCreated: self = .replicaCreated(try ReplicaCreated(p))
        case .replicaSynchronized: self = .replicaSynchronized(try ReplicaSynchronized(p))
        case .replicaUnregistered: self = .replicaUnregistered(try ReplicaUnregistered(p))
        }
    }

    /// The typed payload (nil for `.unknown`).
    public var payload: (any EventPayload)? {
        switch self {
        case .schemaDefined(let x): x
        case .schemaChanged(let x): x
        case .featureBaselined(let x): x
        case .sessionStarted(let x): x
        case .attributeStaged(let x): x
        case .relationStaged(let x): x
        case .attachmentStaged(let x): x
        case .attachmentRenameStaged(let x): x
        case .attachmentDetachStaged(let x): x
        case .sessionResumed(let x): x
        case .sessionCommitted(let x): x
        case .sessionCanceled(let x): x
        case .sessionAbandoned(let x): x
        case .featureDeleted(let x): x
        case .featureDerived(let x): x
        case .scriptRecorded(let x): x
        case .mergeDecided(let x): x
        case .conflictResolved(let x): x
        case .syncPulled(let x): x
        case .syncPushed(let x): x
        case .replicaCreated(let x): x
        case .replicaSynchronized(let x): x
        case .replicaUnregistered(let x): x
        case .unknown: nil
        }
    }

    /// The type's name as stored.
    public var typeName: String {
        if case .unknown(let t, _) = self { return t }
        return type(of: payload!).eventType.rawValue
    }

    /// The canonical payload bytes (an unknown type's, as stored).
    public var canonicalBytes: [UInt8] {
        if case .unknown(_, let p) = self { return p.serializedBytes() }
        var w = PayloadWriter()
        payload!.write(to: &w)
        return w.finish()
    }

    /// The payload as a JSON value (what `log --json` and a bundle show), read back from the canonical bytes.
    public var json: JSONValue {
        if case .unknown(_, let p) = self { return p }
        do { return try JSONParser.parse(canonicalBytes) } catch { preconditionFailure("a payload writer wrote JSON that does not parse: \(error)") }
    }

    /// The field changes a feature-changing body writes (a commit's, a rule's, a resolution's); nil for another.
    public var fieldChanges: FieldChanges? {
        switch self {
        case .sessionCommitted(let c): c.changes
        case .featureDerived(let d): d.changes
        case .conflictResolved(let r): r.changes
        default: nil
        }
    }

    /// The definitions of a schema event (`SchemaDefined`, `SchemaChanged`); nil for another.
    public var schemaDefinitions: SchemaDefinitions? {
        switch self {
        case .schemaDefined(let s): s.definitions
        case .schemaChanged(let s): s.definitions
        default: nil
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

extension EventPayload {
    /// The payload as a JSON value, read back from its canonical bytes.
    public var json: JSONValue { body.json }
}
