/// The event types of the log. Each has a JSON Schema in `schemas/events/`.
public enum EventType: String, Sendable, CaseIterable, Hashable {
    case schemaDefined = "SchemaDefined"
    /// The log's schema changed after it began (a sync that met new definitions, `editlog schema apply`, an imported
    /// bundle): the whole new definitions, what changed, and the local values the change could not keep as conflicts.
    case schemaChanged = "SchemaChanged"
    case featureBaselined = "FeatureBaselined"
    case sessionStarted = "SessionStarted"
    case attributeStaged = "AttributeStaged"
    case relationStaged = "RelationStaged"
    case attachmentStaged = "AttachmentStaged"
    case attachmentRenameStaged = "AttachmentRenameStaged"
    case attachmentDetachStaged = "AttachmentDetachStaged"
    case sessionResumed = "SessionResumed"
    case sessionCommitted = "SessionCommitted"
    case sessionCanceled = "SessionCanceled"
    case sessionAbandoned = "SessionAbandoned"
    case featureDeleted = "FeatureDeleted"
    case featureDerived = "FeatureDerived"
    case scriptRecorded = "ScriptRecorded"
    /// How this log merged the next imported event (a bundle import, a sync pull): fields kept, conflicts.
    case mergeDecided = "MergeDecided"
    /// A conflict re-resolved by hand (`editlog conflicts resolve`): a write of the chosen value.
    case conflictResolved = "ConflictResolved"
    /// `editlog sync` pulled a service's changes up to a server generation (recorded with the pulled events).
    case syncPulled = "SyncPulled"
    /// `editlog sync` pushed this log's changes to a service: what was sent and the service's answer.
    case syncPushed = "SyncPushed"
    /// `serve`'s createReplica: a client took layers offline (who, which layers, queries and area, the generation).
    case replicaCreated = "ReplicaCreated"
    /// `serve`'s synchronizeReplica: what a replica uploaded (as sessions of cause `replica:<id>`), what it was
    /// sent, the generations, and what its upload overwrote.
    case replicaSynchronized = "ReplicaSynchronized"
    /// `serve`'s unRegisterReplica, or a synchronize that closed the replica.
    case replicaUnregistered = "ReplicaUnregistered"

    /// The type of this name. Written out: the synthesized one looked each name up in a table it hashed per call,
    /// and an import or a replay parses every event's type more than once. The names are compared in the order of
    /// how often a log holds them, so a typical name is found in a compare or three.
    public init?(rawValue: String) {
        for t in Self.byFrequency where t.rawValue == rawValue {
            self = t
            return
        }
        return nil
    }

    /// Every case, the most frequent in a field log first (staged attributes, then session starts and commits).
    static let byFrequency: [EventType] = [
        .attributeStaged, .sessionStarted, .sessionCommitted, .featureDerived, .featureBaselined, .relationStaged, .attachmentStaged,
        .sessionCanceled, .sessionResumed, .sessionAbandoned, .featureDeleted, .attachmentRenameStaged, .attachmentDetachStaged,
        .mergeDecided, .conflictResolved, .scriptRecorded, .schemaDefined, .schemaChanged, .syncPulled, .syncPushed,
        .replicaCreated, .replicaSynchronized, .replicaUnregistered,
    ]
}

/// Streams: one per feature (`<layerId>:<GlobalID>`), plus system streams that start with `$`.
public enum StreamName {
    public static let schema = "$schema"
    public static let scripts = "$scripts"
    /// Sync state: what each run pulled from and pushed to a service.
    public static let sync = "$sync"
    /// The replicas `serve` handed out: created, synchronized, unregistered.
    public static let replicas = "$replicas"
    public static func feature(layer: Int, globalId: String) -> String { "\(layer):\(globalId)" }

    public static func parseFeature(_ stream: String) -> (layer: Int, globalId: String)? {
        // Through the UTF-8 view (':' is ASCII, so its index splits the text on a scalar boundary): found by
        // Character, a parse cost more (an import parses every event's stream).
        let u = stream.utf8
        guard let colon = u.firstIndex(of: UInt8(ascii: ":")), let l = Int(stream[..<colon]) else { return nil }
        return (l, String(stream[u.index(after: colon)...]))
    }
}

/// Why an event happened.
public enum Cause {
    public static let session = "session"
    public static let baseline = "baseline"
    public static let delete = "delete"
    public static let system = "system"
    public static func rule(_ name: String) -> String { "rule:\(name)" }
    public static func cascade(from globalId: String) -> String { "cascade:\(globalId)" }
    /// A merge decision of an import (`import:<origin log id>`).
    public static func merge(from logId: String) -> String { "merge:\(logId)" }
    public static let resolution = "resolution"
    /// A change pulled from a feature service by `editlog sync`.
    public static let syncPull = "sync-pull"
    /// `editlog sync`'s own record of a run.
    public static let sync = "sync"
    /// An edit a replica uploaded (`synchronizeReplica`): its sessions' start and commit, its deletes.
    public static func replica(_ id: String) -> String { "replica:\(id)" }
    /// `serve`'s record of a replica operation.
    public static let replicaOperation = "replica"
    /// A schema change `editlog schema apply` recorded.
    public static let schemaApply = "schema-apply"
    /// A schema change an import brought: the definitions the other log's events need (`import:<origin log id>`).
    public static func schemaImport(from logId: String) -> String { "import:\(logId)" }
}
