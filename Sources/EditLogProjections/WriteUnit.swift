import EditLogCore
import EditLogStore
import Foundation
import GRDB

/// One write transaction of a log: its connection, its appender (positions, stream versions, the hash chain) and its
/// projector. Every event a log writes goes through one (`EventStore.writeUnit` opens it):
/// - `emit` appends events of this log and projects each at once, so the next step reads the state they leave;
/// - `emitImported` does so in place for an event of another log (an import's bulk path: canonical payload, hash
///   computed ahead);
/// - `derive` runs the rules on the state the transaction holds and emits what they derive;
/// - `release` (EditLogImport) deletes again what lived only because a feature the transaction deleted did;
/// - the projection rows are written before the commit; nothing of a unit whose body throws is written.
public struct WriteUnit {
    public let db: Database
    public let projector: Projector
    /// The schema in force: the projector's once it has one (a `SchemaChanged` this unit emitted replaces it), else the
    /// log's as the unit began (the projector has none until the log's `SchemaDefined` event created the tables).
    public var schema: ServiceSchema { projector.schema ?? initialSchema }
    let initialSchema: ServiceSchema
    /// Replaces the rules' offline geocoder (`derive`).
    public var geocoder: (any ReverseGeocoder)?
    var appender: Appender

    init(db: Database, appender: consuming Appender, projector: Projector, schema: ServiceSchema, geocoder: (any ReverseGeocoder)?) {
        self.db = db
        self.appender = appender
        self.projector = projector
        self.initialSchema = schema
        self.geocoder = geocoder
    }

    /// The log's id generator (event ids, generated session and conflict ids).
    public var ids: any IDGenerator { appender.ids }
    /// The position and hash of the log's last event, this transaction's appends included.
    public var headPosition: Int64 { appender.headPosition }
    public var headHash: [UInt8] { appender.headHash }
    /// Events this unit appended, in order (none when `keepsAppended` is off).
    public var appended: [RecordedEvent] { appender.appended }
    /// Off for an import of a whole bundle, which keeps its report instead of a million events (`Appender.keepsAppended`).
    public var keepsAppended: Bool {
        get { appender.keepsAppended }
        set { appender.keepsAppended = newValue }
    }
    /// Streams whose version the unit remembers at most (`Appender.versionLimit`).
    public var versionLimit: Int? {
        get { appender.versionLimit }
        set { appender.versionLimit = newValue }
    }

    /// The state as this transaction holds it (pending projection rows included).
    public var world: ProjectedState { ProjectedState(db: db, schema: schema, projector: projector) }
    /// The dataset rules on that state.
    public var rules: RuleEngine { RuleEngine(world: world, geocoderOverride: geocoder) }

    // MARK: emit

    /// Appends a new event of this log (`expected`: its stream's version, `.conflict` otherwise) and projects it.
    @discardableResult
    public mutating func emit(_ e: NewEvent, expected: ExpectedVersion = .any, blob: [UInt8]? = nil) throws -> RecordedEvent {
        let r = try appender.append(e, expected: expected, blob: blob)
        try projector.apply(r, db)
        return r
    }

    /// An event a decider or a rule gave, emitted as this log's with a new id, in `context`.
    @discardableResult
    public mutating func emit(_ p: PendingEvent, context: EventContext) throws -> RecordedEvent {
        try emit(NewEvent(id: appender.ids.next(), stream: p.stream, body: p.body, context: context, session: p.session, cause: p.cause),
                 blob: p.blob)
    }

    /// Each event in turn (`emit(_:context:)`).
    public mutating func emit(_ pending: [PendingEvent], context: EventContext) throws {
        for p in pending { try emit(p, context: context) }
    }

    /// Appends an event first recorded in another log in place and projects it (`Appender.appendImported(_:canonicalPayload:…)`:
    /// `canonicalPayload`, `streamVersion` and `guess` as there). Returns the position of the event already stored under
    /// its id (then nothing was written or projected), or nil once it is appended.
    public mutating func emitImported(_ e: inout RecordedEvent, canonicalPayload: [UInt8], streamVersion: Int64? = nil, guess: ChainGuess? = nil) throws -> Int64? {
        if let stored = try appender.appendImported(&e, canonicalPayload: canonicalPayload, streamVersion: streamVersion, guess: guess) { return stored }
        try projector.apply(e, db)
        return nil
    }

    /// Appends an event this very log recorded elsewhere (a replica catching up with its hub) at the position it holds
    /// there, and projects it: the replica's chain must give it the same position and hash, or the replica has
    /// diverged (`.corrupt`, nothing written).
    public mutating func emitFollowed(_ e: RecordedEvent) throws {
        guard e.position == appender.headPosition + 1 else {
            throw EditLogError(.corrupt, "the replica is at position \(appender.headPosition); the next event it was given is at \(e.position)")
        }
        guard case .appended(let r) = try appender.append(EventAppend(recorded: e, expected: .exact(e.streamVersion - 1))), r.hash == e.hash else {
            throw EditLogError(.corrupt, "the replica's chain does not give event \(e.id.lowercasedString) the hash it has in its hub", at: "position \(e.position)")
        }
        try projector.apply(r, db)
    }

    /// Notes a stream that has no event in the log (`Appender.noteNewStream`).
    public mutating func noteNewStream(_ stream: String) throws { try appender.noteNewStream(stream) }

    /// Stores attachment bytes content-addressed; whether they were new to this log (`Appender.storeBlob`).
    @discardableResult
    public func storeBlob(_ data: [UInt8]) throws -> Bool { try appender.storeBlob(data) }

    /// Begins storing a large blob piece by piece; nil when the log holds it already (`Appender.beginBlob`).
    public func beginBlob(sha256: [UInt8], size: Int64) throws -> BlobWriter? { try appender.beginBlob(sha256: sha256, size: size) }

    // MARK: derive

    /// Runs the rules after `trigger` on the state this transaction holds, and emits what they derive in `context`, each
    /// event as `adjust` gives it (nil leaves it out). Returns the events emitted.
    @discardableResult
    public mutating func derive(after trigger: RuleEngine.Trigger, context: EventContext,
                                adjust: (PendingEvent) throws -> PendingEvent? = { $0 }) throws -> [RecordedEvent] {
        guard !schema.rules.isEmpty else { return [] }
        var out: [RecordedEvent] = []
        for p in try rules.derive(after: trigger) {
            guard let p = try adjust(p) else { continue }
            out.append(try emit(p, context: context))
        }
        return out
    }
}

extension EventStore {
    /// One atomic write through a unit of work: a projector for `schema` (none until the projection tables exist: the
    /// log's `SchemaDefined` event creates them), whose rows are written before the commit. Every error comes out as
    /// an `EditLogError`; whatever `body` throws, nothing of it is written.
    /// `gated`: the write passes the store's commit gate, if one is set (a replica's catch-up does not).
    public func writeUnit<T>(schema: ServiceSchema, geocoder: (any ReverseGeocoder)? = nil, gated: Bool = true,
                             _ body: (inout WriteUnit) throws -> T) throws(EditLogError) -> T {
        let logId = self.logId
        return try write(gated: gated, owning: { db, appender in
            let projector = Projector(schema: try db.tableExists("p_sessions") ? schema : nil, logId: logId)
            projector.createsChangeIndex = true
            var unit = WriteUnit(db: db, appender: consume appender, projector: projector, schema: schema, geocoder: geocoder)
            let result = try body(&unit)
            try projector.flush(db)
            return (result, unit.appender)
        })
    }
}
