import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// An event of this log's own about a system stream (sync state), appended with the log's ids and clock.
public struct SystemEvent: Sendable, Hashable {
    public var stream: String
    public var type: EventType
    public var payload: JSONValue
    public var cause: String
    public init(stream: String, type: EventType, payload: JSONValue, cause: String) {
        self.stream = stream; self.type = type; self.payload = payload; self.cause = cause
    }
}

/// What `editlog sync` (module EditLogSync) reads and writes through the facade: the current state of features,
/// the events of a stream, the features changed since a position, and imports closed by sync-state events in the
/// same transaction.
extension EditLog {
    /// A new event id from the log's generator (injected in tests).
    public func nextEventId() -> UUID { store.ids.next() }

    /// The log's clock, as ISO-8601.
    public func nowString() -> String { Timestamp.format(milliseconds: store.clock.now()) }

    /// The position of the last event of the data the log was made from (its schema and baseline).
    public func baselineEnd() throws(EditLogError) -> Int64 {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM events WHERE type IN (?, ?)",
                               arguments: [EventType.schemaDefined.rawValue, EventType.featureBaselined.rawValue]) ?? 0
        }
    }

    /// Every event of one stream, in position order.
    public func streamEvents(_ stream: String) throws(EditLogError) -> [RecordedEvent] {
        try read { db in
            var out: [RecordedEvent] = []
            try EventReading.forEach(db, where: "stream = ?", arguments: [stream]) { out.append($0) }
            return out
        }
    }

    /// A feature's current projected state (deleted ones too), or nil when this log never had it.
    public func snapshot(layer: Int, globalId: String) throws(EditLogError) -> FeatureSnapshot? {
        let schema = self.schema
        return try read { db in try ProjectedState(db: db, schema: schema).feature(layer: layer, globalId: globalId) }
    }

    /// Features of one layer by GlobalID (deleted ones too), each with its attachments (detached ones too), read
    /// in one transaction: what a sync compares a window of pulled features with. Features this log never had
    /// are absent.
    public func snapshots(layer: Int, globalIds: [String]) throws(EditLogError) -> [String: (feature: FeatureSnapshot, attachments: [AttachmentSnapshot])] {
        let schema = self.schema
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
        let schema = self.schema
        return try read { db in try ProjectedState(db: db, schema: schema).attachments(of: globalId, includeDeleted: includeDeleted) }
    }

    /// Every feature of a layer (deleted ones too), in ObjectID order.
    public func allFeatures(layer: Int) throws(EditLogError) -> [FeatureSnapshot] {
        let schema = self.schema
        return try read { db in
            let state = ProjectedState(db: db, schema: schema)
            let gids = try String.fetchAll(db, sql: "SELECT _globalid FROM \(ProjectionTables.featureTable(layer)) ORDER BY _oid")
            return try gids.compactMap { try state.feature(layer: layer, globalId: $0) }
        }
    }

    /// The features with an event after `position` other than those of the given causes and types, in stream order.
    public func changedFeatures(after position: Int64, excludingCauses causes: Set<String>, excludingTypes types: Set<EventType>) throws(EditLogError) -> [(layer: Int, globalId: String)] {
        try read { db in
            var seen = Set<String>()
            let rows = try Row.fetchAll(db, sql: "SELECT stream, cause, type FROM events WHERE position > ? AND stream NOT LIKE '$%' ORDER BY position", arguments: [position])
            var out: [(Int, String)] = []
            for r in rows {
                let stream: String = r[0], cause: String = r[1], type: String = r[2]
                if causes.contains(cause) || EventType(rawValue: type).map(types.contains) == true { continue }
                guard let f = StreamName.parseFeature(stream), seen.insert(stream).inserted else { continue }
                out.append(f)
            }
            return out
        }
    }

    /// Imports events of another source as `importEvents` does, then appends `closing` (built from the report) in
    /// the same transaction: the pulled events and the sync state that names them commit together or not at all.
    public func importEvents(policy: MergePolicy, rule: LastInRule = .clientTime, actor: String, device: String, source: String,
                             _ feed: (_ event: (RecordedEvent) throws -> Void, _ blob: ([UInt8]) throws -> Void) throws -> Void,
                             closing: (ImportReport) throws -> [SystemEvent]) throws(EditLogError) -> ImportReport {
        try importEvents(policy: policy, rule: rule, actor: actor, device: device, source: source,
                         withPayloads: { event, blob in
                             try withoutActuallyEscaping(event) { event in
                                 try withoutActuallyEscaping(blob) { blob in
                                     try feed({ e in var e = e; _ = try event(&e, nil, nil) }, { bytes in try blob(BlobPiece(whole: bytes)) })
                                 }
                             }
                         }, closing: closing)
    }

    /// `importEvents`, fed each event with its payload's canonical bytes when the source has them (a bundle's
    /// reader serialized the payload to check the event's hash): the import then does not serialize it again; and with
    /// its hash in this log computed ahead (`ChainGuess`), when the source guessed it. `event` returns whether the
    /// guess held (true without one).
    func importEvents(policy: MergePolicy, rule: LastInRule = .clientTime, actor: String, device: String, source: String,
                      withPayloads feed: (_ event: (inout RecordedEvent, [UInt8]?, ChainGuess?) throws -> Bool, _ blob: (BlobPiece) throws -> Void) throws -> Void,
                      closing: (ImportReport) throws -> [SystemEvent], expectedEvents: Int = 0,
                      indexDeferral: IndexDeferral? = nil) throws(EditLogError) -> ImportReport {
        let schema = self.schema
        let geocoder = self.geocoder
        let indexDeferral = indexDeferral ?? self.indexDeferral
        let now = Timestamp.format(milliseconds: store.clock.now())
        // An import meets a whole bundle's features, each in a burst of events: the caches a recording transaction
        // keeps (SQLite's pages, stream versions, features read) are bounded lower, until after the commit.
        try store.setPageCache(kib: Importer.pageCacheKiB)
        defer { try? store.setPageCache(kib: EventStore.writerCacheKiB) }
        return try writeMapped { db, appender, projector in
            // The report is the result: the imported events are not held in memory.
            appender.keepsAppended = false
            appender.versionLimit = Importer.streamVersionLimit
            projector.featureCacheLimit = Importer.featureCacheLimit
            projector.pendingLimit = Importer.pendingRowLimit
            let context = EventContext(actor: actor, device: device, clientTime: now)
            var importer = try Importer(schema: schema, policy: policy, rule: rule, ownLog: store.logId, context: context, source: source)
            importer.expectedEvents = expectedEvents
            let deferredIndexes = indexDeferral.defers(expectedEvents: expectedEvents, held: appender.headPosition)
                ? try ProjectionTables.dropIndexes(db, ProjectionTables.importDeferredIndexes(db)) : []
            try feed({ e, payload, guess in
                try importer.importEvent(&e, canonicalPayload: payload, guess: guess, db: db, appender: &appender, projector: projector)
                guard let guess else { return true }
                return appender.headPosition == guess.position && appender.headHash == guess.hash
            },
                     { piece in try importer.importBlob(piece, db: db, appender: &appender) })
            if !deferredIndexes.isEmpty {
                try projector.flush(db)
                // SQLite's sorter takes as much memory as the page cache may: the cache gives it up first.
                try EventStore.shrinkPageCache(db, toKiB: Importer.indexSortKiB)
                try ProjectionTables.createIndexes(db, deferredIndexes)
                // The import's end reads children by their keys: the indexes are back before it.
                try EventStore.setPageCache(db, kib: Importer.pageCacheKiB)
            }
            try importer.finish(db: db, appender: &appender, projector: projector, geocoder: geocoder)
            for s in try closing(importer.report) {
                let e = NewEvent(id: appender.ids.next(), stream: s.stream, type: s.type, payload: s.payload, context: context, session: nil, cause: s.cause)
                try projector.apply(try appender.append(e), db)
            }
            return importer.report
        }
    }

    /// Appends this log's own system events in one transaction.
    @discardableResult
    public func appendSystemEvents(_ events: [SystemEvent], actor: String, device: String) throws(EditLogError) -> [RecordedEvent] {
        let now = Timestamp.format(milliseconds: store.clock.now())
        return try writeMapped { db, appender, projector in
            var out: [RecordedEvent] = []
            for s in events {
                let e = NewEvent(id: appender.ids.next(), stream: s.stream, type: s.type, payload: s.payload,
                                 context: EventContext(actor: actor, device: device, clientTime: now), session: nil, cause: s.cause)
                let r = try appender.append(e)
                try projector.apply(r, db)
                out.append(r)
            }
            return out
        }
    }
}
