import EditLogBundle
import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation

extension Importer {
    /// Streams this log may hold for an import's reading thread to guess where the import appends (`ChainGuesser`):
    /// their versions are held in memory for the whole import.
    public static let guessedStreamLimit = 10_000

    /// Imports a bundle into `store` in one transaction, all or nothing (`run`): every check of a bundle's reading
    /// (a failed one rolls the import back), then the events merged under `policy` and the blobs stored. A bundle of
    /// another schema is refused unless `schema` has every layer and field it has (this one may have added some).
    /// Events already here are skipped. The import's events are recorded by `actor` on `device` at the log's clock.
    /// `indexDeferral` applies unless the bundle is this log's own (then nothing is written, the indexes included).
    public static func importBundle(at path: String, into store: EventStore, schema: ServiceSchema, geocoder: (any ReverseGeocoder)?,
                                    policy: MergePolicy, trust: [[UInt8]], actor: String, device: String, limits: BundleLimits,
                                    indexDeferral: IndexDeferral, progress: ((Int64, Int64) -> Void)?) throws(EditLogError) -> (report: ImportReport, contents: BundleContents) {
        let reader = try BundleReader(path: path, limits: limits)
        let ours = try store.read { db -> String in
            guard let e = try EventReading.ownSchemaEvent(db) else {
                throw EditLogError(.corrupt, "the log has no SchemaDefined event", at: path)
            }
            return SchemaFingerprint.of(schemaPayload: e.payload)
        }
        if reader.manifest.schemaFingerprint != ours {
            let theirs: ServiceSchema
            do { theirs = try Projector.decodeSchema(reader.schema) } catch { throw EditLogError(.invalidInput, "the bundle's schema.json cannot be read: \(error.message)", at: path) }
            if let problem = schema.incompatibility(importing: theirs, here: "this log", there: "the bundle") {
                throw EditLogError(.invalidInput, "the bundle was exported from a log of another schema, which this log's cannot hold: \(problem)", at: path)
            }
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
        let report: ImportReport
        do {
            report = try run(into: store, schema: schema, geocoder: geocoder, policy: policy, rule: .clientTime, context: context, source: source,
                             expectedEvents: Int(clamping: total),
                             // This log's own events are all here already: importing them writes nothing, the indexes included.
                             indexDeferral: reader.manifest.originLogId == store.logId ? .never : indexDeferral, { event, blob in
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
}
