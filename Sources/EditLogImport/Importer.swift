import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// What an import did.
public struct ImportReport: Sendable, Hashable {
    /// Events appended to this log.
    public var imported = 0
    /// Events whose id this log already holds (a second import of the same bundle, an overlapping one, own events).
    public var alreadyPresent = 0
    /// `MergeDecided` events recorded (an imported event applied otherwise than as it came, or a parent kept).
    public var decisions = 0
    /// Conflicts met by this import, with their decision.
    public var conflicts: [Conflict] = []
    /// `FeatureDerived` events recorded after the merge (rules derived again from the merged state).
    public var derived = 0
    /// Attachment blobs stored (new to this log).
    public var blobs = 0
    /// This log's positions of the first and last event the import appended, its own decisions and derived values
    /// included (nil when nothing was appended).
    public var firstPosition: Int64?
    public var lastPosition: Int64?
    /// What the import adopted of the other log's schema (a `SchemaChanged` of this log, cause `import:<log>`, recorded
    /// before the events at `schemaPosition`): layers, fields and relationships its events need (`SchemaAdoption`).
    public var schemaChanges: [SchemaChange] = []
    public var schemaPosition: Int64?
    /// Fields the other log's schema has that this log removed (`layer.field`): their values stay in history only.
    public var removedFields: [String] = []
    /// Values of fields this log's schema lacks (`removedFields`, or removed by the other log before it exported) in
    /// the imported events: kept in the events (history), not projected.
    public var unprojectedValues = 0

    public init() {}

    public var json: JSONValue {
        .object([
            "imported": .int(Int64(imported)), "alreadyPresent": .int(Int64(alreadyPresent)), "decisions": .int(Int64(decisions)),
            "conflicts": .array(conflicts.map(\.json)), "derived": .int(Int64(derived)), "blobs": .int(Int64(blobs)),
            "firstPosition": firstPosition.map(JSONValue.int) ?? .null, "lastPosition": lastPosition.map(JSONValue.int) ?? .null,
            "schemaChanges": .array(schemaChanges.map(\.json)), "schemaPosition": schemaPosition.map(JSONValue.int) ?? .null,
            "removedFields": .array(removedFields.map(JSONValue.string)), "unprojectedValues": .int(Int64(unprojectedValues)),
        ])
    }
}

/// Imports events recorded in other logs into this one, inside the caller's write transaction: each event
/// keeps its id, origin and facts and is chained into this log; an event already here is skipped; events about
/// features this log changed too go through the merge engine, whose decisions (and conflicts) are recorded as
/// `MergeDecided` events just before the event they decide. `finish` keeps relationships whole and derives the
/// rules' values again from the merged state. Bundles and service sync both import through this type.
public struct Importer {
    public let schema: ServiceSchema
    public let engine: MergeEngine
    /// Who runs the import (the actor of the decisions and derived events), and where.
    public let context: EventContext
    /// What the import reads from (a bundle's name, a service), named by derived events.
    public let source: String
    public internal(set) var report = ImportReport()

    /// Features the import changed, by GlobalID: their layer and every value their relationship keys had before
    /// (each (field, value) once). One entry per feature for the whole import, so it is kept small: GlobalIDs as
    /// 128-bit keys, the earlier key values in an array (usually empty or one).
    var touched: [GlobalIDKey: Touched] = [:]
    struct Touched {
        var keys: [(field: String, value: NotedValue)] = []
        /// For a feature the import created: the latest writer (last-in-wins order) of every event in its stream,
        /// all imported by this import. Its history holds no later writer, so an event written after it and
        /// plain without history (`MergeEngine.decidesPlainly`) is merged without reading the stream.
        /// `WriterBound.none` for a feature this log had.
        var latest = WriterBound.none
        /// The feature's layer, as its index in `schema.layers`.
        var layerIndex: UInt16
        /// For a feature the import created: the log (its index in `origins`) that every event of its stream came
        /// from so far, in that log's order, each applied as it came: this log holds the feature as that log held it
        /// when it wrote the next one (`keepsOrigin`). -1 for a feature this log had, and once anything else met it.
        var origin: Int16 = -1
        /// For a feature the import created: its stream's version once the import appended to it since (-1 before,
        /// or past `Int32.max`), so the appender need not look it up (it remembers only `streamVersionLimit` streams).
        var version: Int32 = -1
        /// Whether this log did not have the feature before the import.
        var created: Bool { latest.log >= 0 }
    }
    /// A writer's last-in-wins order key in 16 bytes: its origin log as an index into `origins` (-1: none), its
    /// origin position up to `Int32.max` (that value: unknown, never before a writer of the same time and log).
    /// With `version`, a `Touched` is 32 bytes (`ImporterLayoutTests`): one per feature a bundle touches.
    struct WriterBound {
        var millis: Int64
        var position: Int32
        var log: Int32
        static let none = WriterBound(millis: 0, position: 0, log: -1)
    }
    /// Origin log ids met by this import, for `WriterBound`.
    var origins: [String] = []
    var originIndex: [String: Int32] = [:]
    /// Layer ids to their index in `schema.layers` (`Touched.layerIndex`).
    let layerIndexes: [Int: UInt16]
    /// Whether this log held no feature when the import began (nil until the first event): then a feature the import
    /// did not create is not in the log, and `finish` has less to look for.
    var startedEmpty: Bool?
    /// A relationship key's value: a canonical GlobalID in 17 bytes, anything else as it is.
    enum NotedValue: Equatable {
        case globalId(GlobalIDKey)
        case other(JSONValue)

        init(_ v: JSONValue) {
            if case .string(let s) = v, case let key = GlobalIDKey(s), case .bits = key { self = .globalId(key) } else { self = .other(v) }
        }

        var json: JSONValue {
            switch self {
            case .globalId(let k): return .string(k.globalId)
            case .other(let v): return v
            }
        }
    }

    /// The ids of the events in this log, when it held at most `idFilterPreload` as the import began (read at the
    /// first event, with `startedEmpty`; nil for a larger log), and every id the import appends: an id the filter rules
    /// out is not looked up (`isPresent`).
    var knownIds: EventIdFilter?
    /// Likewise the streams that have events (`append`: a stream ruled out is at version 0, not looked up) and the
    /// sessions started (`importEvent`: a session ruled out is not looked for among this log's).
    var knownStreams: StringFilter?
    var knownSessions: StringFilter?
    /// Events a log may hold for their ids, streams and sessions to be read into the filters at the import's first
    /// event. The filters take 12 bits per key they are sized for.
    public static let idFilterPreload = 100_000
    /// How many events the caller expects to import (a bundle's manifest says), if it knows: the filters are sized
    /// for them (one cache line per lookup instead of one per level grown).
    public var expectedEvents = 0

    /// Whether an import of `expectedEvents` into a log of `held` events creates some projection indexes
    /// (`ProjectionTables.importDeferredIndexes`) once, after its events, rather than row by row: when it brings at
    /// least `minimum` events and at least as many as the log holds, so that one pass over each table costs no more
    /// than the rows it inserts. Their random pages otherwise compete with the events' stream index for the page cache
    /// through the whole transaction, spilled to the WAL and read back (`tools/BENCH-RESULTS.md`).
    public static func defersIndexes(expectedEvents: Int, held: Int64, minimum: Int = deferredIndexMinimum) -> Bool {
        expectedEvents >= minimum && Int64(expectedEvents) >= held
    }
    /// Below this many events, an import's session rows fit the page cache beside the rest.
    public static let deferredIndexMinimum = 20_000

    /// The page cache while the deferred indexes are created, in KiB: small, as SQLite's sorter may take as much again
    /// beside what the cache gave back to the heap (the sorter then merges runs it wrote to temporary files).
    public static let indexSortKiB = 2_048

    /// The ids, streams and started sessions of every event in the log, if it holds at most `idFilterPreload`.
    static func readFilters(_ db: Database, expectedEvents: Int) throws -> (ids: EventIdFilter, streams: StringFilter, sessions: StringFilter)? {
        // Positions are gap-free from 1: the last is the count, read from the end of the table, not counted.
        let held = try Int.fetchOne(db, sql: "SELECT MAX(position) FROM events") ?? 0
        guard held <= idFilterPreload else { return nil }
        var ids = EventIdFilter(expected: held + expectedEvents)
        let cursor = try Data.fetchCursor(db, sql: "SELECT id FROM events")
        while let bytes = try cursor.next() {
            guard bytes.count == 16 else { throw EditLogError(.corrupt, "an event's id is \(bytes.count) bytes, not 16") }
            ids.insert(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
        }
        // A bundle's events come several to a stream and to a session (the bench's counts: `tools/BENCH-RESULTS.md`),
        // so the filters are sized at a fraction of the events; a filter that fills up grows another level.
        var streams = StringFilter(expected: held / 8 + expectedEvents / 8)
        for s in try String.fetchAll(db, sql: "SELECT DISTINCT stream FROM events") { streams.insert(s) }
        var sessions = StringFilter(expected: held / 4 + expectedEvents / 4)
        let started = try String.fetchAll(db, sql: "SELECT session FROM events WHERE type = ? AND session IS NOT NULL", arguments: [EventType.sessionStarted.rawValue])
        for s in started { sessions.insert(s) }
        return (ids, streams, sessions)
    }

    /// Whether `e` is in the log already (one lookup by id, after the id filter). It must then be the same event:
    /// the same origin (log, position, hash). Another one under that id (a bundle's copy altered and its chain hashed
    /// again, or a client that reused an event id) is refused, never counted as already here.
    func isPresent(_ e: RecordedEvent, _ db: Database) throws -> Bool {
        if let knownIds, !knownIds.mayContain(e.id) {
            #if DEBUG
            // Debug builds (the tests) check every id the filter rules out.
            if let p = try EventReading.position(ofEventId: e.id, db) {
                throw EditLogError(.corrupt, "the import's id filter ruled out event \(e.id.lowercasedString), which the log holds at position \(p)")
            }
            #endif
            return false
        }
        guard let here = try EventReading.origin(ofEventId: e.id, db) else { return false }
        guard here == e.origin else {
            throw EditLogError(.invalidInput, "event \(e.id.lowercasedString) is already in this log, first recorded at position \(here.position) of log \(here.logId) "
                               + "(hash \(Hex.encode(here.hash).prefix(16))…), but the import's copy says position \(e.origin.position) of log \(e.origin.logId) "
                               + "(hash \(Hex.encode(e.origin.hash).prefix(16))…): another event under the same id (altered, or a reused id); nothing was imported",
                               at: "origin position \(e.origin.position) of log \(e.origin.logId)")
        }
        return true
    }

    /// Whether this log may hold a session of this id (false: it certainly does not).
    func mayHoldSession(_ session: String, _ world: ProjectedState) throws -> Bool {
        guard let knownSessions, !knownSessions.mayContain(session) else { return true }
        #if DEBUG
        // Debug builds (the tests) check every session the filter rules out.
        if let g = try world.sessionGlobalId(id: session) {
            throw EditLogError(.corrupt, "the import's session filter ruled out session \(session), which the log holds (for feature \(g))")
        }
        #endif
        return false
    }

    /// Whether this log did not have the feature before the import.
    func created(_ globalId: String) -> Bool { touched[GlobalIDKey(globalId)]?.created == true }
    var deletedParents: [(layer: Int, globalId: String)] = []
    /// Parents (by GlobalID key) that a record this log held pointed at before the import deleted it or pointed it
    /// elsewhere, each once, in the order met: one kept for an orphan may have lost its keeper (`releaseKeptParents`).
    var leftParents: [(layer: Int, globalId: String)] = []
    var leftParentsListed: Set<String> = []
    /// Features whose rules' values another log derived, each once, in the order met (a feature this import
    /// created keeps the values it came with, so it is not listed).
    var rederive: [(layer: Int, globalId: String)] = []
    var rederiveListed: Set<String> = []
    /// Blobs the imported events reference.
    var referencedBlobs: Set<BlobRef> = []
    /// The blob whose pieces are coming (`importBlob`), and its writer (nil when this log holds it already).
    var blobInProgress: (sha256: [UInt8], writer: BlobWriter?)?
    /// Feature histories this import read, kept current with every event it appends to their streams
    /// (`appended(_:)`), so a feature's stream is read once per import, not once per event about it.
    var histories: [String: FeatureHistory] = [:]
    /// Histories kept at most (memory stays bounded on large imports; a bundle's events about one feature come close
    /// together). 1,024 until the shortcut past the history for features the import created; few are read since.
    static let historyLimit = 256
    /// Stream versions the appender remembers at most during an import (`Appender.versionLimit`): 16,384 until the
    /// import kept the versions of the streams it created itself (`Touched.version`).
    public static let streamVersionLimit = 4_096
    /// Features the projector keeps read during an import (`Projector.featureCacheLimit`).
    public static let featureCacheLimit = 1_024
    /// Projection rows the projector holds before writing them during an import (`Projector.pendingLimit`).
    public static let pendingRowLimit = 2_048
    /// The writer's page cache during an import, in KiB: large enough that SQLite does not spill the projection's
    /// indexes and feature rows to the WAL mid-transaction and read them back, small enough to keep a million-event
    /// import within the bench's peak-RSS goal (the sizes tried: `tools/BENCH-RESULTS.md`, "Figures moved out of code comments").
    public static let pageCacheKiB = 24_576

    public init(schema: ServiceSchema, policy: MergePolicy, rule: LastInRule = .clientTime, ownLog: String, context: EventContext, source: String) throws(EditLogError) {
        guard schema.layers.count <= Int(UInt16.max) else {
            throw EditLogError(.unsupported, "the log's schema has \(schema.layers.count) layers and tables; an import handles at most 65,535")
        }
        self.schema = schema
        layerIndexes = Dictionary(uniqueKeysWithValues: schema.layers.enumerated().map { ($1.id, UInt16($0)) })
        var excluded: [Int: Set<String>] = [:]
        for rule in schema.rules { for (l, f) in rule.fieldsWritten { excluded[l, default: []].insert(f) } }
        for l in schema.layers { excluded[l.id, default: []].formUnion(l.editFieldsInfo?.all ?? []) }
        self.engine = MergeEngine(policy: policy, rule: rule, ownLog: ownLog, excluded: excluded,
                                  fields: Dictionary(uniqueKeysWithValues: schema.layers.map { ($0.id, Set($0.fields.map { $0.name.lowercased() })) }))
        self.context = context
        self.source = source
    }

    /// An attachment GlobalID this log already holds, added again by another log: the same attachment (same
    /// feature, name, content type and bytes: two logs made from one service's data) applies as a no-op; another
    /// one is refused, naming both, since an attachment's identity is its GlobalID and the two cannot both keep it.
    func checkAddedAttachments(_ e: RecordedEvent, feature: (layer: Int, globalId: String), _ world: ProjectedState) throws {
        guard case .sessionCommitted(let c) = try e.body, !c.attachments.added.isEmpty else { return }
        for s in c.attachments.added {
            guard let here = try world.attachment(globalId: s.attachmentId) else { continue }
            if here.parentLayer == feature.layer, here.parentGlobalId == feature.globalId, here.name == s.name, here.contentType == s.contentType,
               here.sha256 == s.sha256 { continue }
            let layerName = { (id: Int) in self.schema.layer(id: id)?.name ?? "layer \(id)" }
            throw EditLogError(.invalidInput, "event \(e.id.lowercasedString) adds attachment \(s.attachmentId) (\"\(s.name)\", sha256 \(s.sha256.prefix(12))…) to "
                               + "\(layerName(feature.layer)) \(feature.globalId), but this log holds another attachment with that GlobalID (\"\(here.name)\", "
                               + "sha256 \(here.sha256.prefix(12))… on \(layerName(here.parentLayer)) \(here.parentGlobalId)): one of the two clients reused an "
                               + "attachment id; nothing was imported", at: "origin position \(e.origin.position) of log \(e.origin.logId)")
        }
    }

    static let merged: Set<EventType> = [.featureBaselined, .sessionCommitted, .featureDeleted, .conflictResolved, .featureDerived]

    /// Imports one event of another log. Events must come in their origin order (a bundle's order).
    /// `canonicalPayload`, when given, must be `e.canonicalPayload` (saves serializing it again); `guess`, its
    /// hash in this log computed ahead (`ChainGuess`: taken only if it holds). Once appended, `e` is the event as this
    /// log recorded it (its position, stream version and hash here; `Appender.appendImported(_:canonicalPayload:…)`).
    public mutating func importEvent(_ e: inout RecordedEvent, canonicalPayload: [UInt8]? = nil, guess: ChainGuess? = nil, unit: inout WriteUnit) throws {
        let (db, projector) = (unit.db, unit.projector)
        let world = ProjectedState(db: db, schema: schema, projector: projector)
        if startedEmpty == nil {
            startedEmpty = try !world.holdsAnyFeature()
            if let f = try Self.readFilters(db, expectedEvents: expectedEvents) { (knownIds, knownStreams, knownSessions) = f }
        }
        if try isPresent(e, db) {
            report.alreadyPresent += 1
            return
        }
        guard let type = e.eventType else {
            throw EditLogError(.unsupported, "event \(e.id.lowercasedString) has type \(e.type), which this build of EditLog does not know: upgrade editlog to import it",
                               at: "origin position \(e.origin.position) of log \(e.origin.logId)")
        }
        let feature = StreamName.parseFeature(e.stream)
        let featureKey = feature.map { GlobalIDKey($0.globalId) }
        // A feature this event's decision revives: the records its delete took along are revived after the event.
        var revived: LayerSchema?
        if type == .sessionCommitted, let feature { try checkAddedAttachments(e, feature: feature, world) }
        if let key = featureKey, let origin = touched[key]?.origin, origin >= 0, !keepsOrigin(e, type, origin: origin) { touched[key]?.origin = -1 }
        if let feature, let key = featureKey, Self.merged.contains(type) {
            guard let layer = schema.layer(id: feature.layer) else {
                throw EditLogError(.invalidInput, "event \(e.id.lowercasedString) is about layer \(feature.layer), which this log's schema does not have", at: "stream \(e.stream)")
            }
            let writer = Author.Order(e)
            if let t = touched[key], t.origin >= 0, isBefore(t.latest, writer), MergeEngine.isPlainShape(e, type) {
                // A feature the import created, every event of its stream from the event's own log and applied as it
                // came: this log holds it as the event's log did when it wrote the event, so the event's old values are
                // this log's and the decision is plain. Neither the feature nor its history is read. A commit that
                // changes a key to a parent is one: the key's earlier value, which `note` keeps, is the event's old
                // value (`Touched.noteKeys(of:changedBy:)`).
                #if DEBUG
                // Debug builds (the tests) check it against the whole merge, feature and history read.
                guard let before = try world.feature(layer: layer.id, globalId: feature.globalId), engine.decidesPlainly(e, snapshot: before),
                      try engine.decide(e, local: LocalFeature(layer: layer.id, globalId: feature.globalId, snapshot: before, attachments: [:],
                                                               history: try history(of: e.stream, db))).isPlain else {
                    throw EditLogError(.corrupt, "the import merged event \(e.id.lowercasedString) as plain without reading its feature, which decides otherwise")
                }
                for (field, old) in Touched.keyChanges(of: layer, e) where (before.attributes[field] ?? .null) != old {
                    throw EditLogError(.corrupt, "the import took \(field) = \(old.serialized()) for the key feature \(feature.globalId) had before event "
                                       + "\(e.id.lowercasedString), which was \((before.attributes[field] ?? .null).serialized())")
                }
                #endif
                // A relationship key the event changes: the value it had (the event's old value, this log's too) is noted.
                if type == .sessionCommitted { touched[key]?.noteKeys(of: layer, changedBy: e) }
                raiseBound(key, to: writer)
                return try append(&e, type: type, canonicalPayload: canonicalPayload, guess: guess, key: featureKey, unit: &unit)
            }
            // In a log that held no feature, one the import did not create is not there.
            let before = startedEmpty == true && touched[key] == nil ? nil : try world.feature(layer: layer.id, globalId: feature.globalId)
            #if DEBUG
            if before == nil, try world.feature(layer: layer.id, globalId: feature.globalId) != nil {
                throw EditLogError(.corrupt, "the import took feature \(feature.globalId) for one the log does not hold")
            }
            #endif
            if let before, let latest = touched[key]?.latest, latest.log >= 0, isBefore(latest, writer), engine.decidesPlainly(e, snapshot: before) {
                #if DEBUG
                // Debug builds (the tests) check the shortcut against the whole merge, history read.
                let local = LocalFeature(layer: layer.id, globalId: feature.globalId, snapshot: before, attachments: [:], history: try history(of: e.stream, db))
                guard try engine.decide(e, local: local).isPlain else {
                    throw EditLogError(.corrupt, "the import merged event \(e.id.lowercasedString) as plain without its feature's history, which decides otherwise")
                }
                #endif
                // A rule's value the other log derived, for a feature the import created: kept, as the slow path does.
                if type != .featureDerived { note(layer, feature.globalId, before: before, type: type, writer: writer) }
                raiseBound(key, to: writer)
                return try append(&e, type: type, canonicalPayload: canonicalPayload, guess: guess, key: featureKey, unit: &unit)
            }
            // A feature new to this log has nothing to merge with: its history is not read. Its attachments are read
            // only for an event that renames or removes some (the only ones the engine looks them up for).
            var attachmentsNeeded = false
            if before != nil, case .sessionCommitted(let c) = try e.body { attachmentsNeeded = !c.attachments.renamed.isEmpty || !c.attachments.removed.isEmpty }
            let local = LocalFeature(layer: layer.id, globalId: feature.globalId, snapshot: before,
                                     attachments: !attachmentsNeeded ? [:] : Dictionary(try world.attachments(of: feature.globalId, includeDeleted: true).map { ($0.globalId, ($0.name, $0.deleted)) },
                                                                                         uniquingKeysWith: { a, _ in a }),
                                     history: before == nil ? FeatureHistory(ownLog: engine.ownLog) : try history(of: e.stream, db),
                                     liveCascadeParent: type == .featureDeleted && before?.deleted == false ? try liveCascadeParent(of: e, layer: layer, world) : nil)
            var decision = try engine.decide(e, local: local)
            if decision.revives {
                decision.reviveAlso(attachments: try detachedWithFeature(e.stream, feature.globalId, db))
                revived = layer
            }
            if !decision.isPlain {
                for i in decision.conflicts.indices { decision.conflicts[i].id = unit.ids.next().lowercasedString }
                let d = NewEvent(id: unit.ids.next(), stream: e.stream, body: decision.body, context: context,
                                 session: nil, cause: Cause.merge(from: e.origin.logId))
                let r = try unit.emit(d)
                track(r, key: key)
                appended(r)
                report.decisions += 1
                report.conflicts += decision.conflicts
            }
            if let before, !before.deleted, type == .featureDeleted || !Touched.keyChanges(of: layer, e).isEmpty { noteLeaving(layer, before) }
            if type == .featureDerived {
                // A rule's value as the other log derived it: derived again here after the merge.
                if !created(feature.globalId), rederiveListed.insert(e.stream).inserted { rederive.append((feature.layer, feature.globalId)) }
            } else {
                note(layer, feature.globalId, before: before, type: type, writer: writer)
            }
            if !decision.isPlain { touched[key]?.origin = -1 }
            raiseBound(key, to: writer)
        } else if type == .sessionStarted, let session = e.session, try mayHoldSession(session, world),
                  let other = try world.sessionGlobalId(id: session) {
            throw EditLogError(.invalidInput, "event \(e.id.lowercasedString) opens session \(session), which this log already holds (for feature \(other)): "
                               + "session ids must be unique across logs; the other log's client reused one", at: "origin position \(e.origin.position) of log \(e.origin.logId)")
        }
        // Another log's MergeDecided events are its record: their conflicts are listed here too; their decisions do not apply.
        try append(&e, type: type, canonicalPayload: canonicalPayload, guess: guess, key: featureKey, unit: &unit)
        if let layer = revived, let feature {
            try reviveCascaded(layer, feature.globalId, from: e.origin.logId, unit: &unit)
        }
    }

    /// Appends an imported event as it came (after its decision, if any), in place (`e` becomes this log's record of
    /// it), and projects it. `key`: the feature of the event's stream, if it is a feature's.
    mutating func append(_ e: inout RecordedEvent, type: EventType, canonicalPayload: [UInt8]?, guess: ChainGuess?, key: GlobalIDKey?,
                         unit: inout WriteUnit) throws {
        for sha in e.blobReferences { referencedBlobs.insert(BlobRef(sha)) }
        // `index(forKey:)`: the subscript would copy the entry out (its keys array with it).
        let version = key.flatMap { touched.index(forKey: $0) }.flatMap { touched.values[$0].version >= 0 ? Int64(touched.values[$0].version) : nil }
        if version == nil, let knownStreams, !knownStreams.mayContain(e.stream) { try unit.noteNewStream(e.stream) }
        if try unit.emitImported(&e, canonicalPayload: canonicalPayload ?? e.canonicalPayload, streamVersion: version, guess: guess) != nil {
            report.alreadyPresent += 1
            return
        }
        track(e, key: key)
        appended(e)
        if type == .sessionStarted, let s = e.session { knownSessions?.insert(s) }
        report.imported += 1
    }

    /// Stores an attachment's bytes (content-addressed; bytes already here are not stored twice), as its pieces come
    /// in order: a whole blob in one piece is stored at once, a longer one piece by piece (`BlobWriter`, which checks
    /// the count and SHA-256 at the last piece).
    public mutating func importBlob(_ piece: BlobPiece, unit: inout WriteUnit) throws {
        if piece.isWhole, blobInProgress == nil {
            if try unit.storeBlob(piece.bytes) { report.blobs += 1 }
            return
        }
        if piece.isFirst {
            guard blobInProgress == nil else { throw EditLogError(.invalidInput, "a blob begins before the one before it ended", at: "blobs/\(piece.shaText)") }
            blobInProgress = (piece.sha256, try unit.beginBlob(sha256: piece.sha256, size: piece.size))
        }
        guard blobInProgress?.sha256 == piece.sha256 else {
            throw EditLogError(.invalidInput, "a piece of a blob that did not begin", at: "blobs/\(piece.shaText)")
        }
        try blobInProgress!.writer?.write(piece.bytes)
        guard piece.isLast else { return }
        let writer = blobInProgress!.writer
        blobInProgress = nil
        if let writer { try writer.finish(); report.blobs += 1 }
    }

    /// After the last event: every referenced blob must be here; records that lived only because a feature the import
    /// deleted did go again; a parent deleted on one side while the other related a record to it is kept (never an
    /// orphan), and one kept before that nothing keeps any more is deleted again; rules derive their values again from
    /// the merged state.
    public mutating func finish(unit: inout WriteUnit) throws {
        let db = unit.db
        if let sha = blobInProgress?.sha256 { throw EditLogError(.invalidInput, "the import ended inside a blob", at: "blobs/\(Hex.encode(sha))") }
        for ref in referencedBlobs.sorted() {
            let sha = ref.text
            guard let bytes = Hex.decode(sha), bytes.count == 32,
                  try Int64.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM blobs WHERE sha256 = ?"), arguments: [Data(bytes)]) != nil else {
                throw EditLogError(.invalidInput, "an imported event references attachment bytes \(sha), which neither the import nor this log holds", at: "blobs/\(sha)")
            }
        }
        try releaseHeldByDeleted(unit: &unit)
        try keepRelationshipsWhole(unit: &unit)
        try releaseKeptParents(unit: &unit)
        try deriveAgain(unit: &unit)
    }

    // MARK: Bookkeeping

    /// Notes a feature the import changes: its relationship keys before, a deleted parent, a created feature (with
    /// `writer`, its creator, as the first bound of its writers).
    mutating func note(_ layer: LayerSchema, _ g: String, before: FeatureSnapshot?, type: EventType, writer: Author.Order) {
        let key = GlobalIDKey(g)
        touched[key, default: Touched(layerIndex: layerIndexes[layer.id]!)].noteKeys(of: layer, before: before)
        if type == .featureDeleted {
            deletedParents.append((layer.id, g))
        } else if before == nil, type == .featureBaselined || type == .sessionCommitted {
            let b = bound(writer)
            touched[key]?.latest = b
            touched[key]?.origin = Int16(exactly: b.log) ?? -1
        }
    }

    mutating func bound(_ w: Author.Order) -> WriterBound {
        let log: Int32
        if let i = originIndex[w.logId] { log = i } else {
            log = Int32(origins.count)
            origins.append(w.logId)
            originIndex[w.logId] = log
        }
        return WriterBound(millis: w.millis, position: Int32(clamping: w.position), log: log)
    }

    /// Whether `e`, about a feature whose every event so far came from `origins[origin]`, leaves it so: an event of
    /// that log that does not create, delete, resolve or decide. (Its decision, when it is merged, must be plain too.)
    func keepsOrigin(_ e: RecordedEvent, _ type: EventType, origin: Int16) -> Bool {
        guard origins[Int(origin)] == e.origin.logId else { return false }
        switch type {
        case .sessionStarted, .attributeStaged, .relationStaged, .attachmentStaged, .attachmentRenameStaged, .attachmentDetachStaged,
             .sessionResumed, .sessionCanceled, .sessionAbandoned, .featureDerived:
            return true
        case .sessionCommitted:
            guard case .sessionCommitted(let c)? = try? e.body else { return false }
            return !c.isCreate
        default:
            return false
        }
    }

    /// Raises a created feature's bound (`Touched.latest`) to `w` when `w` comes after it.
    mutating func raiseBound(_ key: GlobalIDKey, to w: Author.Order) {
        guard let latest = touched[key]?.latest, latest.log >= 0, isBefore(latest, w) else { return }
        let b = bound(w)
        touched[key]?.latest = b
    }

    /// Keeps the stream version of a feature the import created (`Touched.version`) current with an event appended to it.
    mutating func track(_ r: RecordedEvent, key: GlobalIDKey?) {
        // One lookup of the key (its hash), not one to read and one to write.
        guard let key, let i = touched.index(forKey: key), touched.values[i].created else { return }
        touched.values[i].version = r.streamVersion < Int64(Int32.max) ? Int32(r.streamVersion) : -1
    }

    /// `Author.isBefore` for a bound.
    func isBefore(_ b: WriterBound, _ w: Author.Order) -> Bool {
        if b.millis != w.millis { return b.millis < w.millis }
        let log = origins[Int(b.log)]
        if log != w.logId { return log < w.logId }
        return b.position < Int32.max && Int64(b.position) < w.position
    }

    /// The registers of a feature: its stream folded in this log's order.
    mutating func history(of stream: String, _ db: Database) throws -> FeatureHistory {
        if let h = histories[stream] {
            #if DEBUG
            // Debug builds (the tests) check every cached history against a fresh read of the stream.
            guard try readHistory(of: stream, db) == h else {
                throw EditLogError(.corrupt, "the import's cached history of \(stream) differs from its stream")
            }
            #endif
            return h
        }
        let h = try readHistory(of: stream, db)
        if histories.count >= Self.historyLimit { histories.removeAll(keepingCapacity: true) }
        histories[stream] = h
        return h
    }

    func readHistory(of stream: String, _ db: Database) throws -> FeatureHistory {
        var h = FeatureHistory(ownLog: engine.ownLog)
        try EventReading.forEach(db, where: Self.historyClause, arguments: [stream], cached: true) { try h.apply($0) }
        return h
    }

    /// A stream's events that `FeatureHistory.apply` folds (it ignores every other type): session starts and
    /// staged steps, most of a stream, are not decoded.
    static let historyClause = "stream = ? AND type IN (" + FeatureHistory.foldedTypes.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ") + ")"

    /// Every event the import appends goes through here: a history read before folds it too, so it stays what
    /// reading the stream again would give.
    mutating func appended(_ r: RecordedEvent) {
        if report.firstPosition == nil { report.firstPosition = r.position }
        report.lastPosition = r.position
        knownIds?.insert(r.id)
        knownStreams?.insert(r.stream)
        // Not while it is empty: the subscript's modify accessor made the empty dictionary unique (an allocation)
        // for every event.
        // An event the fold cannot read drops the cached history: the next read of the stream reports it.
        if !histories.isEmpty, histories.index(forKey: r.stream) != nil {
            do throws(EditLogError) { try histories[r.stream]?.apply(r) } catch { histories[r.stream] = nil }
        }
    }

    /// Attachments its last applied delete detached along with the feature (they come back with it).
    func detachedWithFeature(_ stream: String, _ g: String, _ db: Database) throws -> [String] {
        guard let pos = try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM events WHERE stream = ? AND type = ?",
                                           arguments: [stream, EventType.featureDeleted.rawValue]) else { return [] }
        return try String.fetchAll(db, sql: "SELECT global_id FROM p_attachments WHERE parent_global_id = ? AND deleted = 1 AND position = ? ORDER BY global_id",
                                   arguments: [g, pos])
    }
}

extension Importer.Touched {
    /// The relationship keys (a destination's foreign keys) a commit changes, with their old values, by field name.
    static func keyChanges(of layer: LayerSchema, _ e: RecordedEvent) -> [(field: String, old: JSONValue)] {
        guard let changes = (try? e.body)?.fieldChanges, !changes.isEmpty else { return [] }
        var out: [(field: String, old: JSONValue)] = []
        for r in layer.relationships where r.role == .destination {
            guard let fk = layer.field(named: r.keyField)?.name else { continue }
            let key = fk.lowercased()
            guard let change = changes.change(lowercased: key)?.change else { continue }
            out.append((fk, change.old))
        }
        return out
    }

    /// Adds the old values of the relationship keys `e` (a commit) changes, each once: what `noteKeys(of:before:)` notes
    /// when the feature is held as the event's log held it.
    mutating func noteKeys(of layer: LayerSchema, changedBy e: RecordedEvent) {
        for (fk, old) in Self.keyChanges(of: layer, e) where !old.isNull { note(fk, old) }
    }

    /// Adds the values `before` gives the layer's relationship keys (a destination's foreign keys), each once.
    mutating func noteKeys(of layer: LayerSchema, before: FeatureSnapshot?) {
        guard let before else { return }
        for r in layer.relationships where r.role == .destination {
            guard let fk = layer.field(named: r.keyField)?.name, let v = before.attributes[fk], !v.isNull else { continue }
            note(fk, v)
        }
    }

    /// Adds one key's value, unless it is noted already.
    private mutating func note(_ field: String, _ value: JSONValue) {
        let noted = Importer.NotedValue(value)
        if !keys.contains(where: { $0.field == field && $0.value == noted }) { keys.append((field, noted)) }
    }
}

/// Whether an import creates `ProjectionTables.importDeferredIndexes` after its events: `auto` as
/// `Importer.defersIndexes(expectedEvents:held:)` says; `always` and `never` for tests and the crash harness, which
/// check both ways on small bundles.
public enum IndexDeferral: String, Sendable, CaseIterable {
    case auto, always, never

    public func defers(expectedEvents: Int, held: Int64) -> Bool {
        switch self {
        case .auto: return Importer.defersIndexes(expectedEvents: expectedEvents, held: held)
        case .always: return true
        case .never: return false
        }
    }
}
