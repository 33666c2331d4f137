import EditLogCore
import EditLogImport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

@_exported import EditLogCore

/// An EditLog log: the facade apps and the CLI use. Every step that succeeds becomes events at once;
/// a step that fails records nothing.
public final class EditLog {
    let store: EventStore
    /// SQLite settings of a connection that writes a log (page cache, WAL checkpoint interval), for tools that
    /// measure against the same settings.
    public static var writerSettings: [String] { EventStore.writerSettings }
    /// The page cache (KiB) a rebuild's connection uses while it writes the projection rows (the benchmark's floor uses it too).
    public static var rebuildCacheKiB: Int { Projector.asideCacheKiB }
    /// The log's injected clock (epoch milliseconds): what a caller recording on the log's behalf stamps.
    public var clock: any LogClock { store.clock }
    /// The log's injected id generator (event ids and generated session ids).
    public var ids: any IDGenerator { store.ids }
    /// The schema in force: this log's newest schema event's (every read and write of this handle checks it first, so a
    /// change another handle or process recorded is seen; `schemaPosition` is that event's position).
    public private(set) var schema: ServiceSchema
    private(set) var schemaPosition: Int64 = 0
    /// Replaces the rules' offline geocoder (the reverse-geocode rule is pluggable).
    public var geocoder: (any ReverseGeocoder)?
    /// Whether imports create some projection indexes once after their events instead of writing them row by row:
    /// by default when an import brings at least `Importer.deferredIndexMinimum` events and as many as the log holds.
    public var indexDeferral = IndexDeferral.auto

    init(store: EventStore, schema: ServiceSchema, schemaPosition: Int64 = 0) {
        self.store = store
        self.schema = schema
        self.schemaPosition = schemaPosition
    }

    public var path: String { store.path }
    public var logId: String { store.logId }

    // MARK: Create and open

    /// Creates a log for a feature service, optionally loading baseline feature sets, all in one transaction.
    /// On any error the file is removed: nothing is written.
    public static func create(at path: String, service: [(name: String, json: JSONValue)], webmap: JSONValue? = nil, rules: JSONValue? = nil,
                              baseline: [BaselineSet] = [], actor: String = "editlog", device: String = "editlog",
                              clock: any LogClock = SystemClock(), ids: (any IDGenerator)? = nil, logId: String? = nil,
                              progress: ((Int, Int) -> Void)? = nil) throws(EditLogError) -> EditLog {
        let schema = try ArcGISSchemaDecoder.decode(service: service, webmap: webmap, rules: rules)
        // The documents, web map and rules exactly as given (geocoder tables inlined), so replay decodes the same schema.
        let defined = SchemaDefined(SchemaDefinitions(service: service, webmap: webmap, rules: rules))
        let prepared = try Baseline.prepare(baseline, schema: schema)
        if FileManager.default.fileExists(atPath: path) {
            throw EditLogError(.conflict, "\(path) already exists; EditLog never overwrites a log")
        }
        // Build the log under a temporary name and rename it into place when complete, so a crash
        // (even kill -9) leaves either no log or a whole one.
        EventStore.removeStalePartials(of: path)
        let partial = path + ".partial-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        func removePartial() { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial + suffix) } }
        let store = try EventStore.create(at: partial, logId: logId, clock: clock, ids: ids)
        let log = EditLog(store: store, schema: schema)
        do {
            let ctx = EventContext(actor: actor, device: device, clientTime: nil)
            try log.write { unit in
                try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.schema, body: defined.body, context: ctx, session: nil,
                                       cause: Cause.system), expected: .noStream)
                for (k, f) in prepared.enumerated() {
                    let e = NewEvent(id: unit.ids.next(), stream: StreamName.feature(layer: f.layer, globalId: f.globalId), body: f.event.body, context: ctx, session: nil, cause: Cause.baseline)
                    try unit.emit(e, expected: .noStream)
                    if k % 1000 == 0 { progress?(k, prepared.count) }
                }
            }
            try store.close()
        } catch {
            log.close()
            removePartial()
            throw EditLogError.wrapping(error, at: path)
        }
        // link(2) fails if `path` appeared meanwhile: never overwrite a log.
        guard link(partial, path) == 0 else {
            let err = errno
            removePartial()
            throw EditLogError(err == EEXIST ? .conflict : .io, err == EEXIST ? "\(path) already exists; EditLog never overwrites a log" : "cannot create the log: \(String(cString: strerror(err)))", at: path)
        }
        removePartial()
        return try open(at: path, clock: clock, ids: ids)
    }

    public static func open(at path: String, readonly: Bool = false, clock: any LogClock = SystemClock(), ids: (any IDGenerator)? = nil) throws(EditLogError) -> EditLog {
        let store = try EventStore.open(at: path, readonly: readonly, clock: clock, ids: ids)
        if !readonly { EventStore.removeStalePartials(of: path) }
        return try facade(over: store)
    }

    /// The facade over an opened store, with the log's newest schema in force.
    static func facade(over store: EventStore) throws(EditLogError) -> EditLog {
        let event = try store.read { db in
            try EventReading.ownSchemaEvent(db)
        }
        guard let event else { throw EditLogError(.corrupt, "the log has no schema event", at: store.path) }
        do throws(EditLogError) {
            guard let defs = try event.body.schemaDefinitions else { throw event.corrupt("is not a schema event") }
            return EditLog(store: store, schema: try defs.decode(), schemaPosition: event.position)
        } catch {
            throw EditLogError(.corrupt, "the schema event cannot be decoded: \(error.message)", at: "\(store.path): position \(event.position)")
        }
    }

    /// Sets the WAL auto-checkpoint interval of this handle's connection, in pages (0: its commits never checkpoint;
    /// another connection must, see `checkpointPassive()`).
    public func setAutoCheckpoint(pages: Int) throws(EditLogError) { try store.setAutoCheckpoint(pages: pages) }

    /// Copies what it can of the WAL into the log file without waiting for readers or writers.
    public func checkpointPassive() throws(EditLogError) { try store.checkpointPassive() }

    /// Closes the log's connection. A close that fails (a statement still running) leaves SQLite to close it
    /// at exit; nothing is lost, every write is already committed.
    public func close() {
        do { try store.close() } catch {}
    }

    /// Runs `body` in one IMMEDIATE write transaction, its unit of work (`WriteUnit`: every event the log writes goes
    /// through one) with a projector for the current schema and the log's geocoder. Every error comes out as an
    /// `EditLogError` (the store maps SQLite's); nothing of a `body` that throws is written.
    func write<T>(_ body: (inout WriteUnit) throws -> T) throws(EditLogError) -> T {
        var adopted: (ServiceSchema, Int64)?
        let result = try store.writeUnit(schema: schema, geocoder: geocoder) { unit in
            if try refreshSchema(unit.db) { unit.projector.setSchema(schema) }
            let r = try body(&unit)
            if let p = unit.projector.adoptedAt { adopted = (unit.schema, p) }
            return r
        }
        // After the commit: a unit that recorded a schema change leaves it in force on this handle.
        if let (s, p) = adopted { (schema, schemaPosition) = (s, p) }
        return result
    }

    /// Group commit (`EventStore.group`): every write of this handle inside `body` is a savepoint of one transaction
    /// that commits once at the end, passing the commit gate once for all of them. A writer loop runs its queued
    /// requests in one, each under `savepoint`.
    public func group<T>(_ body: () throws -> T) throws(EditLogError) -> T { try store.group(body) }

    /// Inside a `group`: `body`'s writes are undone together when it throws, and the group goes on.
    public func savepoint<T>(_ body: () throws -> T) throws -> T { try store.savepoint(body) }

    /// A read transaction. Internal: GRDB stays behind the facade.
    func read<T>(_ body: (Database) throws -> T) throws(EditLogError) -> T {
        try store.read { db in
            try refreshSchema(db)
            return try body(db)
        }
    }

    /// A read transaction of the projections as the log's schema reads them (`ProjectedState`, where their SQL lives).
    func projected<T>(_ body: (ProjectedState) throws -> T) throws(EditLogError) -> T {
        try read { db in try body(ProjectedState(db: db, schema: schema)) }
    }

    /// Puts this log's newest schema in force on this handle when another handle recorded a change since (one indexed
    /// lookup): the projection tables follow the newest schema, and they are read by its layout. Returns whether it did.
    @discardableResult
    func refreshSchema(_ db: Database) throws -> Bool {
        guard let newest = try EventReading.ownSchemaPosition(db, logId: logId), newest != schemaPosition else { return false }
        guard let e = try EventReading.ownSchemaEvent(db) else { return false }
        do throws(EditLogError) {
            guard let defs = try e.body.schemaDefinitions else { throw e.corrupt("is not a schema event") }
            schema = try defs.decode()
        } catch {
            throw EditLogError(.corrupt, "the schema event cannot be decoded: \(error.message)", at: "\(path): position \(e.position)")
        }
        schemaPosition = e.position
        // The tables were reshaped on another connection: GRDB's cached statements keep the column names they were
        // prepared with (a `SELECT *` row of a reshaped table would be read by the old layout), so they go.
        db.clearSchemaCache()
        return true
    }
}
