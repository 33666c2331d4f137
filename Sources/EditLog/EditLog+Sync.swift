import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// An event of this log's own about a system stream (sync state), appended with the log's ids and clock.
public struct SystemEvent: Sendable {
    public var stream: String
    public var body: EventBody
    public var cause: String
    public init(stream: String, _ payload: some EventPayload, cause: String) {
        self.stream = stream; self.body = payload.body; self.cause = cause
    }

    func newEvent(id: UUID, context: EventContext) -> NewEvent {
        NewEvent(id: id, stream: stream, body: body, context: context, session: nil, cause: cause)
    }
}

/// What `editlog sync` (module EditLogSync) reads and writes through the facade: the current state of features,
/// the events of a stream, the features changed since a position, and its own sync-state events (an import closed by
/// them in the same transaction: `EditLog+Import.swift`).
extension EditLog {
    /// A new event id from the log's generator (injected in tests).
    public func nextEventId() -> UUID { store.ids.next() }

    /// The log's clock, as ISO-8601.
    public func nowString() -> String { Timestamp.format(milliseconds: store.clock.now()) }

    /// The position of the last event of the data the log was made from (its schema and baseline).
    public func baselineEnd() throws(EditLogError) -> Int64 {
        try read { db in try EventReading.baselineEnd(db) }
    }

    /// Every event of one stream, in position order.
    public func streamEvents(_ stream: String) throws(EditLogError) -> [RecordedEvent] {
        try read { db in
            var out: [RecordedEvent] = []
            try EventReading.forEach(db, stream: stream) { out.append($0) }
            return out
        }
    }

    /// The events of one stream that are of `types`, in position order; the others' rows are passed over unread.
    public func streamEvents(_ stream: String, types: [EventType]) throws(EditLogError) -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        try forEachStreamEvent(stream, types: types) { out.append($0) }
        return out
    }

    /// The events of one stream that are of `types`, in position order, one at a time (a fold over a long stream
    /// holds one event, not the stream); the others' rows are passed over unread.
    public func forEachStreamEvent(_ stream: String, types: [EventType], _ body: (RecordedEvent) throws -> Void) throws(EditLogError) {
        try read { db in
            let marks = types.map { _ in "?" }.joined(separator: ", ")
            try EventReading.forEach(db, inStream: stream, where: "type IN (\(marks))", arguments: StatementArguments(types.map(\.rawValue)), body)
        }
    }

    /// A feature's current projected state (deleted ones too), or nil when this log never had it.
    public func snapshot(layer: Int, globalId: String) throws(EditLogError) -> FeatureSnapshot? {
        return try read { db in try ProjectedState(db: db, schema: schema).feature(layer: layer, globalId: globalId) }
    }

    /// Features of one layer by GlobalID (deleted ones too), each with its attachments (detached ones too), read
    /// in one transaction: what a sync compares a window of pulled features with. Features this log never had
    /// are absent.
    public func snapshots(layer: Int, globalIds: [String]) throws(EditLogError) -> [String: (feature: FeatureSnapshot, attachments: [AttachmentSnapshot])] {
        return try read { db in
            let state = ProjectedState(db: db, schema: schema)
            var out: [String: (feature: FeatureSnapshot, attachments: [AttachmentSnapshot])] = [:]
            for g in globalIds where out[g] == nil {
                guard let f = try state.feature(layer: layer, globalId: g) else { continue }
                out[g] = (f, try state.attachments(of: g, includeDeleted: true))
            }
            return out
        }
    }

    /// A feature's attachments (detached ones too with `includeDeleted`).
    public func attachmentSnapshots(of globalId: String, includeDeleted: Bool = false) throws(EditLogError) -> [AttachmentSnapshot] {
        return try read { db in try ProjectedState(db: db, schema: schema).attachments(of: globalId, includeDeleted: includeDeleted) }
    }

    /// Every feature of a layer (deleted ones too), in ObjectID order.
    public func allFeatures(layer: Int) throws(EditLogError) -> [FeatureSnapshot] {
        try projected { state in try state.globalIds(layer: layer).compactMap { try state.feature(layer: layer, globalId: $0) } }
    }

    /// The features with an event after `position` other than those of the given causes and types, in stream order.
    public func changedFeatures(after position: Int64, excludingCauses causes: Set<String>, excludingTypes types: Set<EventType>) throws(EditLogError) -> [(layer: Int, globalId: String)] {
        try read { db in try EventReading.changedFeatures(db, after: position, excludingCauses: causes, excludingTypes: types) }
    }

    /// Those of `streams` with an event after `position` (what `changedFeatures` would list of them, without
    /// reading every event after it).
    public func streams(among streams: some Sequence<String>, withEventsAfter position: Int64) throws(EditLogError) -> Set<String> {
        try read { db in try EventReading.streams(db, among: streams, withEventsAfter: position) }
    }

    /// Appends this log's own system events in one transaction.
    @discardableResult
    public func appendSystemEvents(_ events: [SystemEvent], actor: String, device: String) throws(EditLogError) -> [RecordedEvent] {
        let context = EventContext(actor: actor, device: device, clientTime: nowString())
        return try write { unit in try events.map { s in try unit.emit(s.newEvent(id: unit.ids.next(), context: context)) } }
    }
}
