import EditLogCore

/// Who wrote what of one feature in this log: the registers `last-in-wins` compares, folded from the
/// feature's stream in log order. Pure: the importer reads the stream, this folds it.
public struct FeatureHistory: Sendable, Hashable {
    /// The log whose decisions apply (this log).
    public let ownLog: String
    /// The writer of each field's current value (a baseline's writer for baselined values).
    public private(set) var fieldWriters: [String: Author] = [:]
    /// The latest write to the feature (a create, a commit, a resolution; baselines excluded), even when the
    /// merge kept the local value of every field it wrote.
    public private(set) var lastWrite: Author?
    /// The latest delete, applied or not.
    public private(set) var lastDelete: Author?
    /// The writer of the feature's editor-tracking values here: the latest (in last-in-wins order) of its creates,
    /// baselines, commits, resolutions and rule values (a rule's values derived again after an import, marked
    /// `keepTracking`, and deletes leave the layer's tracking fields as they were). An imported event before it keeps
    /// the tracking (`MergeDecision.keepTracking`), so every log that holds the same events names the same editor.
    public private(set) var lastTracked: Author?
    /// The creation whose creator the feature shows: the latest of its creates and baselines (one GlobalID created
    /// on two sides: the later creation, whose content wins each field under last-in-wins).
    public private(set) var createdBy: Author?
    /// The writer of each attachment's current name, and of its detach.
    public private(set) var attachmentWriters: [String: Author] = [:]
    public private(set) var detachWriters: [String: Author] = [:]
    /// The attributes and geometry the feature was first created (or baselined) with here.
    public private(set) var created: [String: JSONValue]?
    public private(set) var createdGeometry: JSONValue?
    /// Each event's body and effect, with this log's decisions applied (`FeatureEffect`).
    var effects: EffectFold

    public init(ownLog: String) { self.ownLog = ownLog; effects = EffectFold(ownLog: ownLog) }

    /// The event types `apply` folds; it ignores every other.
    public static let foldedTypes: Set<EventType> = [.mergeDecided, .featureBaselined, .featureDerived, .sessionCommitted, .conflictResolved, .featureDeleted]

    public mutating func apply(_ e: RecordedEvent) throws(EditLogError) {
        guard let type = e.eventType, Self.foldedTypes.contains(type) else { return }
        let step = try effects.next(e)
        let effect = step.effect
        let w = Author(e)
        let own = e.origin.logId == ownLog
        func write(_ field: String) {
            if let effect, effect.kept(field) { return }
            fieldWriters[field] = own ? w : latest(fieldWriters[field], w)
        }
        switch step.body {
        case .featureBaselined(let b):
            if created == nil { created = b.attributes; createdGeometry = b.geometry ?? .null }
            for k in b.attributes.keys { write(k) }
            lastTracked = latest(lastTracked, w)
            createdBy = latest(createdBy, w)
        case .featureDerived(let x):
            for k in x.changes.names { write(k) }
            if !x.keepsTracking { lastTracked = latest(lastTracked, w) }
        case .sessionCommitted(let c):
            if created == nil, c.isCreate { created = c.changes.newValues; createdGeometry = c.geometry ?? .null }
            lastTracked = latest(lastTracked, w)
            if c.isCreate { createdBy = latest(createdBy, w) }
            for k in c.changes.names { write(k) }
            lastWrite = latest(lastWrite, w)
            for a in c.attachments.added { attachmentWriters[a.attachmentId] = w }
            for a in c.attachments.renamed where !(effect?.keptAttachments.contains(a.attachmentId) ?? false) {
                attachmentWriters[a.attachmentId] = own ? w : latest(attachmentWriters[a.attachmentId], w)
            }
            // A detach's writer counts whether this log applied it or not (as a delete's).
            for a in c.attachments.removed { detachWriters[a.attachmentId] = latest(detachWriters[a.attachmentId], w) }
        case .conflictResolved(let r):
            // A resolution that closes a conflict as this log held it (no field) changes nothing, tracking included.
            if r.field != nil { lastTracked = latest(lastTracked, w) }
            for k in r.changes.names { write(k) }
            lastWrite = latest(lastWrite, w)
        case .featureDeleted:
            lastDelete = latest(lastDelete, w)
        default:
            return
        }
    }
}
