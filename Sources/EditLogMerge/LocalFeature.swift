import EditLogCore

/// What this log holds of a feature when an imported event about it arrives.
public struct LocalFeature: Sendable, Hashable {
    public var layer: Int
    public var globalId: String
    /// nil: this log has never had the feature.
    public var snapshot: FeatureSnapshot?
    /// Attachment id to (name, detached).
    public var attachments: [String: (name: String, deleted: Bool)]
    public var history: FeatureHistory
    /// For a delete that came with its parent's (cause `cascade:<parent>`): that parent's GlobalID when the parent
    /// lives here (its own delete was not applied, or it was revived). nil otherwise.
    public var liveCascadeParent: String?

    public init(layer: Int, globalId: String, snapshot: FeatureSnapshot?, attachments: [String: (name: String, deleted: Bool)], history: FeatureHistory,
                liveCascadeParent: String? = nil) {
        self.layer = layer; self.globalId = globalId; self.snapshot = snapshot; self.attachments = attachments; self.history = history
        self.liveCascadeParent = liveCascadeParent
    }

    public static func == (a: LocalFeature, b: LocalFeature) -> Bool {
        a.layer == b.layer && a.globalId == b.globalId && a.snapshot == b.snapshot && a.history == b.history && a.liveCascadeParent == b.liveCascadeParent
            && a.attachments.mapValues { "\($0.name)|\($0.deleted)" } == b.attachments.mapValues { "\($0.name)|\($0.deleted)" }
    }
    public func hash(into h: inout Hasher) { h.combine(globalId) }

    func value(_ field: String) -> JSONValue { snapshot?.attributes[field] ?? .null }
}
