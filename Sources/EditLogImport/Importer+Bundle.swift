import EditLogBundle
import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

extension Importer {
    /// Streams this log may hold for an import's reading thread to guess where the import appends (`ChainGuesser`):
    /// their versions are held in memory for the whole import.
    public static let guessedStreamLimit = 10_000

    /// Imports a bundle into `store` in one transaction, all or nothing (`run`): every check of a bundle's reading
    /// (a failed one rolls the import back), then the events merged under `policy` and the blobs stored. A bundle of
    /// another schema brings what this log's lacks (`SchemaAdoption`, the union of the two): its layers, fields and
    /// relationships this log never had are recorded first, in the same transaction, as a `SchemaChanged` of this log
    /// (cause `import:<origin log id>`); a field this log removed is not adopted (its values stay in the events, not
    /// projected); a field whose type differs, a layer named otherwise or one this log removed is refused by name,
    /// with nothing written. Events already here are skipped (a second import records no second change).
    /// The import's events are recorded by `actor` on `device` at the log's clock.
    /// `indexDeferral` applies unless the bundle is this log's own (then nothing is written, the indexes included).
    public static func importBundle(at path: String, into store: EventStore, schema: ServiceSchema, geocoder: (any ReverseGeocoder)?,
                                    policy: MergePolicy, trust: [[UInt8]], actor: String, device: String, limits: BundleLimits,
                                    indexDeferral: IndexDeferral, progress: ((Int64, Int64) -> Void)?) throws(EditLogError) -> (report: ImportReport, contents: BundleContents) {
        let reader = try BundleReader(path: path, limits: limits)
        let ours = try store.read { db -> String in
            guard let e = try EventReading.ownSchemaEvent(db) else {
                throw EditLogError(.corrupt, "the log has no SchemaDefined event", at: path)
            }
            return SchemaFingerprint.of(e)
        }
        var theirs: ServiceSchema?
        if reader.manifest.schemaFingerprint != ours {
            do { theirs = try SchemaDefinitions(json: reader.schema).decode() } catch { throw EditLogError(.invalidInput, "the bundle's schema.json cannot be read: \(error.message)", at: path) }
        }
        let total = reader.manifest.eventCount
        var done: Int64 = 0
        let source = "bundle:" + URL(fileURLWithPath: path).lastPathComponent
        // The bundle is read and checked on a second thread while this one merges and writes; a failed check there
        // reaches this thread after the events before it, and rolls the whole import back.
        // The reading thread also computes each event's hash in this log ahead, on the guess that the events are
        // appended in turn after this log's last one (`ChainGuesser`; a guess that does not hold is not taken).
        let guesser = try store.read { db in try EventReading.chainGuesser(db, streamLimit: guessedStreamLimit) }
        let readAhead = BundleReadAhead(reader, trust: trust, guesser: guesser)
        let context = EventContext(actor: actor, device: device, clientTime: Timestamp.format(milliseconds: store.clock.now()))
        let origin = reader.manifest.originLogId, bundleSchema = reader.schema
        let report: ImportReport
        do {
            report = try run(into: store, schema: schema, geocoder: geocoder, policy: policy, rule: .clientTime, context: context, source: source,
                             expectedEvents: Int(clamping: total),
                             // This log's own events are all here already: importing them writes nothing, the indexes included.
                             indexDeferral: reader.manifest.originLogId == store.logId ? .never : indexDeferral, opening: { unit, report in
                guard let theirs else { return }
                try adopt(theirs, documents: bundleSchema, of: origin, source: source, context: context, unit: &unit, report: &report, at: path)
            }, { event, blob in
                while let item = try readAhead.items.take() {
                    // The item is taken apart (moved, not copied) and put together again to be given back: freed by the
                    // reading thread, which allocated it.
                    switch consume item {
                    case .event(var e, let payload, let location, let guess):
                        let held: Bool
                        // Imported in place: `e` comes back as this log recorded it, and is given back as such.
                        do { held = try event(&e, payload, guess) } catch { throw EditLogError.wrapping(error, at: "\(path): \(location)") }
                        if !held { readAhead.stopGuessing() }
                        done += 1
                        if done % 1024 == 0 { progress?(done, total) }
                        readAhead.items.giveBack(.event(e, canonicalPayload: payload, at: location, guess: guess))
                    case .blob(let piece):
                        do { try blob(piece) } catch { throw EditLogError.wrapping(error, at: "\(path): \(BundleLayout.blobsPrefix)\(piece.shaText)") }
                        readAhead.items.giveBack(.blob(piece))
                    }
                }
            }, closing: { _, _ in })
        } catch {
            readAhead.cancel()
            throw error
        }
        return (report, readAhead.contents)
    }

    /// Records what this log adopts of `theirs` (the schema in `documents`, a schema event's payload, of log `origin`):
    /// a `SchemaChanged` of this log with cause `import:<origin>` whose definitions are this log's documents with the
    /// layers, fields and relationships `theirs` adds (`SchemaAdoption`, `ServiceDocuments.adopting`), through the one
    /// schema-change write (`WriteUnit.changeSchema`). Refuses what cannot be joined, naming it; nothing is written then.
    static func adopt(_ theirs: ServiceSchema, documents: JSONValue, of origin: String, source: String, context: EventContext,
                      unit: inout WriteUnit, report: inout ImportReport, at path: String) throws {
        let db = unit.db
        var history: [ServiceSchema] = []
        var current: RecordedEvent?
        let own = try EventStore.logId(in: db)
        try EventReading.forEach(db, stream: StreamName.schema) { e in
            guard own == nil || e.origin.logId == own else { return }
            guard let defs = try e.body.schemaDefinitions else { throw e.corrupt("is not a schema event") }
            history.append(try defs.decode())
            current = e
        }
        guard let current else { throw EditLogError(.corrupt, "the log has no schema event", at: path) }
        let adoption = unit.schema.adoption(of: theirs, history: history, here: "this log", there: "the bundle")
        if !adoption.problems.isEmpty {
            throw EditLogError(.invalidInput, "the bundle was exported from a log of another schema, which this log's cannot hold: "
                               + adoption.problems.joined(separator: "; ") + "; nothing was imported", at: path)
        }
        report.removedFields = adoption.removedHere.compactMap { c in c.field.map { "\(c.layerName).\($0)" } }
        guard !adoption.adopted.isEmpty else { return }
        let docs = ServiceDocuments.adopting(adoption.adopted, into: try current.body.schemaDefinitions?.service ?? [],
                                                from: try SchemaDefinitions(json: documents).service, theirSchema: theirs)
        let (plan, e) = try unit.changeSchema(service: docs, cause: Cause.schemaImport(from: origin), source: source, context: context)
        // The documents joined must change exactly what was adopted (nothing of this log's own is lost on the way).
        guard Set(plan.changes.map(\.text)) == Set(adoption.adopted.map(\.text)), let e else {
            throw EditLogError(.invalidInput, "the bundle's definitions could not be joined to this log's: adopting "
                               + adoption.adopted.map(\.text).joined(separator: ", ") + " changes " + plan.changes.map(\.text).joined(separator: ", "), at: path)
        }
        report.schemaChanges = plan.changes
        report.schemaPosition = e.position
        report.firstPosition = e.position
        report.lastPosition = e.position
    }
}
