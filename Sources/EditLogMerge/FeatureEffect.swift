import EditLogCore

/// What one event does to its feature in this log, with this log's merge decision about it applied: the row
/// created, updated or deleted, the values written, the editor tracking, the attachments, and what the decision
/// kept or made live again. The one reading of a `MergeDecision`'s flags: the projector writes it, and diff,
/// blame, history, the report, the importer's view of local history and the sync pull read it, so each shows
/// what the projection holds.
public struct FeatureEffect: Sendable {
    public enum Row: Sendable, Equatable {
        /// A new row (a baseline, a create).
        case create
        /// The values written to the existing row.
        case update
        /// Deleted by the event (its editor columns name the delete).
        case delete
        /// Deleted again by a standalone decision of this log (a feature it had kept live).
        case deleteAgain
        /// The row is not written (a delete the merge did not apply, a resolution that kept what this log held, a
        /// decision that only made the feature live again).
        case none
    }

    /// Values written: a create's attributes or a change's new values (`{"old", "new"}` in the payload).
    public enum Values: Sendable {
        case attributes([String: JSONValue])
        case changes(FieldChanges)
        case none
    }

    public var layer: Int
    public var globalId: String
    public var row: Row
    /// The feature (deleted here) is live again before the event applies.
    public var revives = false
    var values: Values = .none
    /// Fields whose value this log kept: the event's values for them are not written.
    public var keptFields: [String] = []
    /// The geometry written (nil: unchanged).
    public var geometry: JSONValue?
    public var tracking: EditorTracking = .keep
    /// A create merged as an update: fields the layer does not have are not written (rather than an error).
    public var ignoresUnknownFields = false
    /// What the commit did to the feature's attachments, without the renames and detaches this log kept.
    public var attachments: AttachmentChanges?
    /// Attachment renames and detaches of the event this log kept.
    public var keptAttachments: [String] = []
    /// Attachments live again (with the feature), or detached again (with a feature deleted again).
    public var revivedAttachments: [String] = []
    public var detachedAttachments: [String] = []
    /// This log's conflicts about the event (the decision's).
    public var conflicts: [Conflict] = []

    init(layer: Int, globalId: String, row: Row) { self.layer = layer; self.globalId = globalId; self.row = row }

    /// The values written, field by field (old is null for a create's attributes), without the fields this log kept.
    public func forEachValue(_ body: (_ field: String, _ old: JSONValue, _ new: JSONValue) throws -> Void) rethrows {
        switch values {
        case .attributes(let a):
            for (k, v) in a where keptFields.isEmpty || !keptFields.contains(k) { try body(k, .null, v) }
        case .changes(let c):
            try c.forEach { k, old, new in if keptFields.isEmpty || !keptFields.contains(k) { try body(k, old, new) } }
        case .none:
            return
        }
    }

    /// The values written, sorted by field name.
    public var sortedValues: [(field: String, old: JSONValue, new: JSONValue)] {
        var out: [(field: String, old: JSONValue, new: JSONValue)] = []
        forEachValue { out.append(($0, $1, $2)) }
        return out.sorted { $0.field < $1.field }
    }

    /// The geometry is this log's own: the event's was not taken.
    public var keptGeometry: Bool { keptFields.contains(MergeEngine.geometryField) }

    /// `field` kept its local value.
    public func kept(_ field: String) -> Bool { !keptFields.isEmpty && keptFields.contains(field) }

    /// The effect of `body` (of event `e`) given this log's decision about it (nil: applied as it came). Nil for an
    /// event that changes no feature.
    public static func of(_ e: RecordedEvent, _ body: EventBody, decision d: MergeDecision?) -> FeatureEffect? {
        switch body {
        case .featureBaselined(let b):
            if let d, d.asUpdate { return mergedCreate(b.layer, b.globalId, .attributes(b.attributes), geometry: b.geometry, d) }
            var f = FeatureEffect(layer: b.layer, globalId: b.globalId, row: .create)
            f.values = .attributes(b.attributes)
            f.geometry = b.geometry.flatMap { $0.isNull ? nil : $0 }
            f.tracking = .baseline
            f.decided(by: d)
            return f
        case .sessionCommitted(let c):
            var f: FeatureEffect
            if let d, d.asUpdate {
                f = mergedCreate(c.layer, c.globalId, .changes(c.changes), geometry: c.geometry, d)
            } else if let d, !d.skipFields.isEmpty {
                // A commit some of whose fields this log kept: the others written as an update, even of a create.
                f = FeatureEffect(layer: c.layer, globalId: c.globalId, row: .update)
                f.values = .changes(c.changes)
                f.tracking = d.keepTracking ? .keep : .edit
            } else if c.isCreate {
                f = FeatureEffect(layer: c.layer, globalId: c.globalId, row: .create)
                f.values = .changes(c.changes)
                f.geometry = c.geometry.flatMap { $0.isNull ? nil : $0 }
                f.tracking = .create
            } else {
                f = FeatureEffect(layer: c.layer, globalId: c.globalId, row: .update)
                f.values = .changes(c.changes)
                f.tracking = d?.keepTracking == true ? .keep : .edit
            }
            f.decided(by: d)
            f.revives = d?.revive == true
            f.revivedAttachments = d?.reviveAttachments ?? []
            var atts = c.attachments
            if let d, !d.skipAttachments.isEmpty {
                f.keptAttachments = d.skipAttachments
                atts.renamed.removeAll { d.skipAttachments.contains($0.attachmentId) }
                atts.removed.removeAll { d.skipAttachments.contains($0.attachmentId) }
            }
            f.attachments = atts
            return f
        case .featureDeleted(let x):
            var f = FeatureEffect(layer: x.layer, globalId: x.globalId, row: d?.skipDelete == true ? .none : .delete)
            f.decided(by: d)
            return f
        case .featureDerived(let x):
            var f = FeatureEffect(layer: x.layer, globalId: x.globalId, row: .update)
            f.values = .changes(x.changes)
            // A rule's values derived again after an import keep the tracking: every log that merged the same events
            // names the same editor, whichever of them derived again.
            f.tracking = d?.keepTracking == true || x.keepsTracking ? .keep : .edit
            f.decided(by: d)
            return f
        case .conflictResolved(let r):
            // A conflict closed as this log held it (no field): nothing changes, not even editor tracking.
            guard r.field != nil else { return FeatureEffect(layer: r.layer, globalId: r.globalId, row: .none) }
            var f = FeatureEffect(layer: r.layer, globalId: r.globalId, row: .update)
            f.values = .changes(r.changes)
            f.tracking = d?.keepTracking == true ? .keep : .edit
            f.decided(by: d)
            f.revives = d?.revive == true
            f.revivedAttachments = d?.reviveAttachments ?? []
            return f
        default:
            return nil
        }
    }

    /// A create of a GlobalID this log already has, merged: the fields the decision did not keep, as an update,
    /// with the later writer's tracking (a baseline's tracking fields are data: `keepTrackingFields`).
    static func mergedCreate(_ layer: Int, _ globalId: String, _ values: Values, geometry: JSONValue?, _ d: MergeDecision) -> FeatureEffect {
        var f = FeatureEffect(layer: layer, globalId: globalId, row: .update)
        f.values = values
        f.ignoresUnknownFields = true
        f.decided(by: d)
        f.geometry = f.keptGeometry ? nil : geometry.flatMap { $0.isNull ? nil : $0 }
        f.tracking = EditorTracking(editor: !d.keepTracking, creator: d.takeCreator, fields: !d.keepTrackingFields)
        f.revives = d.revive
        f.revivedAttachments = d.reviveAttachments
        return f
    }

    mutating func decided(by d: MergeDecision?) {
        guard let d else { return }
        keptFields = d.skipFields
        conflicts = d.conflicts
    }

    /// A standalone decision of this log (about no event): the feature live again (kept for an orphan, or with its
    /// parent), or deleted again now that nothing keeps it, with the attachments that go with it.
    public static func of(standalone d: MergeDecision) -> FeatureEffect? {
        guard d.event == nil, d.revive || d.deleteAgain || !d.reviveAttachments.isEmpty || !d.detachAttachments.isEmpty else { return nil }
        var f = FeatureEffect(layer: d.layer, globalId: d.globalId, row: d.deleteAgain ? .deleteAgain : .none)
        f.revives = d.revive
        f.revivedAttachments = d.reviveAttachments
        f.detachedAttachments = d.detachAttachments
        f.conflicts = d.conflicts
        return f
    }
}

/// Reads a log's events in order and gives each one's typed body and its effect on its feature, with this log's
/// decisions applied: a decision is held until the event it names comes (the importer records it just before).
public struct EffectFold: Sendable, Hashable {
    /// The log whose decisions apply (another log's are records of its conflicts only).
    public var ownLog: String?
    var pending: [String: MergeDecision] = [:]

    public init(ownLog: String?) { self.ownLog = ownLog }

    /// One event read: its body, this log's decision about it, and its effect (nil for an event that changes no
    /// feature). A `MergeDecided` event's own effect is that of a standalone decision of this log.
    public struct Step: Sendable {
        public var body: EventBody
        public var decision: MergeDecision?
        public var effect: FeatureEffect?
    }

    /// The next event; `.corrupt` at its position when its payload is not what its type says.
    public mutating func next(_ e: RecordedEvent) throws(EditLogError) -> Step {
        let body = try e.body
        if case .mergeDecided(let d) = body {
            guard let ownLog, d.log == ownLog else { return Step(body: body, decision: d, effect: nil) }
            if let target = d.event {
                pending[target] = d
                return Step(body: body, decision: d, effect: nil)
            }
            return Step(body: body, decision: d, effect: FeatureEffect.of(standalone: d))
        }
        let decision = pending.isEmpty ? nil : pending.removeValue(forKey: e.id.lowercasedString)
        return Step(body: body, decision: decision, effect: FeatureEffect.of(e, body, decision: decision))
    }

    /// Starting after `last` (a replay from a checkpoint): a decision of this log recorded there still applies to
    /// the next event. `.corrupt` at its position when it is a decision that cannot be read.
    public mutating func resume(after last: RecordedEvent) throws(EditLogError) {
        guard case .mergeDecided(let d) = try last.body else { return }
        guard d.log == ownLog, let target = d.event else { return }
        pending[target] = d
    }

    /// This log's decision about `e`, given the event just before it (where the importer records it): for readers
    /// that do not read every event in order (`diff` by type, from a window's start). `.corrupt` at the position
    /// before `e` when that decision cannot be read.
    public static func decision(about e: RecordedEvent, before previous: RecordedEvent, ownLog: String) throws(EditLogError) -> MergeDecision? {
        guard case .mergeDecided(let d) = try previous.body else { return nil }
        guard d.log == ownLog, d.event == e.id.lowercasedString else { return nil }
        return d
    }

}

extension MergeDecision {
    /// What a decision of this log did to its feature's being live, as the importer weighs what keeps a record.
    public enum Liveness: Sendable {
        /// Made live by a standalone decision (kept for an orphan, or live again with its parent).
        case keptLive
        /// Made live with an imported event that it decided about.
        case liveWithEvent
        /// Deleted again now that nothing keeps it.
        case deletedAgain
    }

    public var liveness: Liveness? {
        if deleteAgain { return .deletedAgain }
        if revive { return event == nil ? .keptLive : .liveWithEvent }
        return nil
    }
}
