import EditLogCore

/// Who wrote what of one feature in this log: the registers `last-in-wins` compares, folded from the
/// feature's stream in log order. Pure: the importer reads the stream, this folds it.
public struct FeatureHistory: Sendable, Hashable {
    /// The log whose decisions apply (this log).
    public let ownLog: String
    /// The writer of each field's current value (a baseline's writer for baselined values).
    public private(set) var fieldWriters: [String: Writer] = [:]
    /// The latest write to the feature (a create, a commit, a resolution; baselines excluded), even when the
    /// merge kept the local value of every field it wrote.
    public private(set) var lastWrite: Writer?
    /// The latest delete, applied or not.
    public private(set) var lastDelete: Writer?
    /// The writer of the feature's editor-tracking values here: the latest (in last-in-wins order) of its creates,
    /// baselines, commits, resolutions and rule values (a rule's values derived again after an import, marked
    /// `keepTracking`, and deletes leave the layer's tracking fields as they were). An imported event before it keeps
    /// the tracking (`MergeDecision.keepTracking`), so every log that holds the same events names the same editor.
    public private(set) var lastTracked: Writer?
    /// The creation whose creator the feature shows: the latest of its creates and baselines (one GlobalID created
    /// on two sides: the later creation, whose content wins each field under last-in-wins).
    public private(set) var createdBy: Writer?
    /// The writer of each attachment's current name, and of its detach.
    public private(set) var attachmentWriters: [String: Writer] = [:]
    public private(set) var detachWriters: [String: Writer] = [:]
    /// The attributes and geometry the feature was first created (or baselined) with here.
    public private(set) var created: [String: JSONValue]?
    public private(set) var createdGeometry: JSONValue?
    /// Decisions of this log waiting for their event.
    var pending: [String: MergeDecision] = [:]

    public init(ownLog: String) { self.ownLog = ownLog }

    /// The event types `apply` folds; it ignores every other.
    public static let foldedTypes: Set<EventType> = [.mergeDecided, .featureBaselined, .featureDerived, .sessionCommitted, .conflictResolved, .featureDeleted]

    public mutating func apply(_ e: RecordedEvent) {
        guard let type = e.eventType, Self.foldedTypes.contains(type) else { return }
        let id = e.id.lowercasedString
        let decision = pending.removeValue(forKey: id)
        let skip = Set(decision?.skipFields ?? [])
        let skipAtt = Set(decision?.skipAttachments ?? [])
        let w = Writer(e)
        let own = e.origin.logId == ownLog
        func write(_ field: String) {
            guard !skip.contains(field) else { return }
            fieldWriters[field] = own ? w : latest(fieldWriters[field], w)
        }
        switch type {
        case .mergeDecided:
            guard let d = try? MergeDecision(json: e.payload), d.log == ownLog, let target = d.event else { return }
            pending[target] = d
        case .featureBaselined:
            let attrs = e.payload["attributes"]?.objectValue ?? [:]
            if created == nil { created = attrs; createdGeometry = e.payload["geometry"] ?? .null }
            for k in attrs.keys { write(k) }
            lastTracked = latest(lastTracked, w)
            createdBy = latest(createdBy, w)
        case .featureDerived:
            for k in (e.payload["changes"]?.objectValue ?? [:]).keys { write(k) }
            if e.payload["keepTracking"] != true { lastTracked = latest(lastTracked, w) }
        case .sessionCommitted, .conflictResolved:
            let changes = e.payload["changes"]?.objectValue ?? [:]
            if created == nil, e.payload["kind"]?.stringValue == "create" {
                created = changes.mapValues { $0["new"] ?? .null }; createdGeometry = e.payload["geometry"] ?? .null
            }
            // A resolution that closes a conflict as this log held it (no field) changes nothing, tracking included.
            if type == .sessionCommitted || e.payload["field"] != nil { lastTracked = latest(lastTracked, w) }
            if e.payload["kind"]?.stringValue == "create" { createdBy = latest(createdBy, w) }
            for k in changes.keys { write(k) }
            lastWrite = latest(lastWrite, w)
            let atts = e.payload["attachments"]
            for a in atts?["added"]?.arrayValue ?? [] { if let a = a["attachmentId"]?.stringValue { attachmentWriters[a] = w } }
            for a in atts?["renamed"]?.arrayValue ?? [] {
                if let a = a["attachmentId"]?.stringValue, !skipAtt.contains(a) { attachmentWriters[a] = own ? w : latest(attachmentWriters[a], w) }
            }
            for a in atts?["removed"]?.arrayValue ?? [] {
                if let a = a["attachmentId"]?.stringValue { detachWriters[a] = latest(detachWriters[a], w) }
            }
        case .featureDeleted:
            lastDelete = latest(lastDelete, w)
        default:
            return
        }
    }
}
