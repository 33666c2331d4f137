import EditLogCore

/// What an event does to its feature's editor tracking as this log applies it: part of its `FeatureEffect`,
/// which the projector writes and `diff`, `history` and `blame` read, so each shows the row the projection holds.
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
}
