import EditLogCore
import EditLogMerge

/// What an event does to its feature's editor tracking as this log applies it (this log's merge decision
/// about it included). The one rule: the projector writes it, and `diff`, `history` and `blame` read it, so
/// each shows the row the projection holds.
public struct EditorTracking: Sendable, Hashable {
    /// The event names its actor and time as the last editor.
    public var editor: Bool
    /// The event names its actor and time as the creator.
    public var creator: Bool = false
    /// In the layer's editor-tracking fields too, not only the internal `_editor`/`_creator` columns (a
    /// baseline's tracking fields are data, the service's own values).
    public var fields = true

    public init(editor: Bool, creator: Bool = false, fields: Bool = true) { self.editor = editor; self.creator = creator; self.fields = fields }

    public static let keep = EditorTracking(editor: false)
    public static let edit = EditorTracking(editor: true)
    public static let create = EditorTracking(editor: true, creator: true)
    /// A baseline's row: the internal columns name it, the layer's fields hold the baseline's values.
    public static let baseline = EditorTracking(editor: true, creator: true, fields: false)

    /// A create of a GlobalID this log already had, merged as an update: the later writer's tracking.
    public static func asUpdate(_ d: MergeDecision) -> EditorTracking {
        EditorTracking(editor: !d.keepTracking, creator: d.takeCreator, fields: !d.keepTrackingFields)
    }

    /// The tracking `e` applies, given this log's decision about it. Deletes and decisions leave the layer's
    /// fields as they were (the projector moves the internal columns of a delete itself).
    public static func of(_ e: RecordedEvent, decision d: MergeDecision?) -> EditorTracking {
        switch e.eventType {
        case .featureBaselined?:
            if let d, d.asUpdate { return asUpdate(d) }
            return .baseline
        case .sessionCommitted?:
            if let d, d.asUpdate { return asUpdate(d) }
            if let d, !d.skipFields.isEmpty { return d.keepTracking ? .keep : .edit }
            if e.payload["kind"]?.stringValue == "create" { return .create }
            return d?.keepTracking == true ? .keep : .edit
        case .featureDerived?:
            // A rule's values derived again after an import (`keepTracking` in the payload) keep the tracking.
            return d?.keepTracking == true || e.payload["keepTracking"] == true ? .keep : .edit
        case .conflictResolved?:
            // A conflict closed as this log held it (no field) changes nothing.
            if e.payload["field"] == nil { return .keep }
            return d?.keepTracking == true ? .keep : .edit
        default:
            return .keep
        }
    }
}

extension LayerSchema {
    /// The values `tracking` writes to this layer's editor-tracking fields (`editFieldsInfo`) for `e`.
    public func editorTrackingValues(of e: RecordedEvent, _ tracking: EditorTracking) -> [String: JSONValue] {
        guard tracking.fields, tracking.editor || tracking.creator else { return [:] }
        var tracked = editorTrackingValues(of: e, create: tracking.creator)
        if !tracking.editor, let info = editFieldsInfo {
            for f in [info.editorField, info.editDateField] { if let name = f.flatMap({ field(named: $0)?.name }) { tracked[name] = nil } }
        }
        return tracked
    }

    /// The values `e` writes to this layer's editor-tracking fields as this log applies it.
    public func editorTrackingValues(of e: RecordedEvent, decision: MergeDecision?) -> [String: JSONValue] {
        editorTrackingValues(of: e, EditorTracking.of(e, decision: decision))
    }
}
