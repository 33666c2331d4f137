

/// How a log applies one imported event when a plain application would be wrong: the payload of a
/// `MergeDecided` event, recorded just before the imported event. Only the log that made a decision applies
/// it (`log`); elsewhere it is the record of a conflict.
public struct MergeDecision: EventPayload, Hashable {
    public static let eventType = EventType.mergeDecided
    /// The deciding log.
    public var log: String
    /// The imported event this decides (nil: a standalone decision, e.g. a parent revived after the import).
    public var event: String?
    public var layer: Int
    public var globalId: String
    /// Fields of the event's changes not applied (the local value stays).
    public var skipFields: [String] = []
    /// A create of a GlobalID this log already has: applied as an update of the fields not skipped.
    public var asUpdate = false
    /// A delete not applied.
    public var skipDelete = false
    /// The feature's editor-tracking values stay as they are: the event comes before the write they name
    /// (`FeatureHistory.lastTracked`), in last-in-wins order.
    public var keepTracking = false
    /// A create applied as an update (`asUpdate`) that is the later creation: the feature's creator becomes its.
    public var takeCreator = false
    /// A baseline applied as an update: the layer's editor-tracking fields stay as the data has them (only the internal
    /// tracking columns follow the writer). Decisions recorded before this field existed set those fields.
    public var keepTrackingFields = false
    /// The feature, deleted here, is live again (with the attachments its delete detached) before the event applies.
    public var revive = false
    /// Attachment renames or detaches of the event not applied.
    public var skipAttachments: [String] = []
    /// Attachments detached here that are live again before the event applies.
    public var reviveAttachments: [String] = []
    /// The parent (GlobalID) this record was deleted with, through a composite relationship (its delete's cause is
    /// `cascade:<parent>`), when the decision follows the parent's: the record's delete is skipped because the parent
    /// lives here, or the record is live again with the parent. The conflict, if any, is the parent's.
    public var cascadeOf: String?
    /// A standalone decision: the feature, live here only by an earlier standalone decision of this log (kept for an
    /// orphan, or live again with such a parent: `cascadeOf`), is deleted again now that nothing keeps it, as the
    /// deletes that reached it say (the log's latest delete of it, or its parent's cascade). Logs that never needed to
    /// keep it hold it deleted too.
    public var deleteAgain = false
    /// Attachments detached again with the feature (those the decision that kept it made live again).
    public var detachAttachments: [String] = []
    public var conflicts: [Conflict] = []

    public init(log: String, event: String?, layer: Int, globalId: String) {
        self.log = log; self.event = event; self.layer = layer; self.globalId = globalId
    }

    /// Nothing to do differently from a plain application, and nothing to record.
    public var isPlain: Bool {
        skipFields.isEmpty && !asUpdate && !skipDelete && !revive && !keepTracking && skipAttachments.isEmpty && reviveAttachments.isEmpty && !deleteAgain
            && detachAttachments.isEmpty && conflicts.isEmpty
    }

    public func write(to w: inout PayloadWriter) {
        w.flag("asUpdate", asUpdate)
        w.string("cascadeOf", ifPresent: cascadeOf)
        w.value("conflicts", .array(conflicts.map(\.json)))
        w.flag("deleteAgain", deleteAgain)
        if !detachAttachments.isEmpty { w.strings("detachAttachments", detachAttachments) }
        w.stringOrNull("event", event)
        w.string("globalId", globalId)
        w.flag("keepTracking", keepTracking)
        w.flag("keepTrackingFields", keepTrackingFields)
        w.int("layer", layer)
        w.string("log", log)
        w.flag("revive", revive)
        if !reviveAttachments.isEmpty { w.strings("reviveAttachments", reviveAttachments) }
        if !skipAttachments.isEmpty { w.strings("skipAttachments", skipAttachments) }
        w.flag("skipDelete", skipDelete)
        if !skipFields.isEmpty { w.strings("skipFields", skipFields) }
        w.flag("takeCreator", takeCreator)
    }

    public var body: EventBody { .mergeDecided(self) }

    public init(_ p: PayloadReader) throws(EditLogError) {
        let json = p.payload
        guard let log = json["log"]?.stringValue, let layer = json["layer"]?.intValue, let g = json["globalId"]?.stringValue else {
            throw p.corrupt("a MergeDecided payload lacks log, layer or globalId")
        }
        self.init(log: log, event: json["event"]?.stringValue, layer: Int(layer), globalId: g)
        func strings(_ k: String) -> [String] { json[k]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        skipFields = strings("skipFields")
        asUpdate = json["asUpdate"]?.boolValue ?? false
        skipDelete = json["skipDelete"]?.boolValue ?? false
        keepTracking = json["keepTracking"]?.boolValue ?? false
        takeCreator = json["takeCreator"]?.boolValue ?? false
        keepTrackingFields = json["keepTrackingFields"]?.boolValue ?? false
        revive = json["revive"]?.boolValue ?? false
        skipAttachments = strings("skipAttachments")
        reviveAttachments = strings("reviveAttachments")
        cascadeOf = json["cascadeOf"]?.stringValue
        deleteAgain = json["deleteAgain"]?.boolValue ?? false
        detachAttachments = strings("detachAttachments")
        var cs: [Conflict] = []
        for c in json["conflicts"]?.arrayValue ?? [] {
            do throws(EditLogError) { cs.append(try Conflict(json: c)) } catch { throw p.corrupt(error.message) }
        }
        conflicts = cs
    }
}
