import EditLogBundle
import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import GRDB
import Foundation

@_exported import struct EditLogBundle.BundleLimits
@_exported import struct EditLogBundle.BundleManifest
@_exported import struct EditLogBundle.BundleContents
@_exported import class EditLogBundle.BundleReader
@_exported import struct EditLogBundle.BundleInspection
@_exported import struct EditLogBundle.BundleExportSummary
@_exported import enum EditLogBundle.BundleSince
@_exported import enum EditLogBundle.BundleDeflate
@_exported import enum EditLogBundle.BundleSignature

/// Change bundles: export a range of this log (with its blobs) to a file anyone can read with gzip and tar;
/// inspect and verify bundles without importing them.
extension EditLog {
    /// Writes the events after `since` up to `until` (a position or a time on `clock`; nil: the head), optionally only
    /// the named layers' features (system streams always), and every blob they reference, to `out`.
    /// With `peer`, the export is recorded so the next `since: .lastExport(peer:)` starts after it. `deflate` picks the
    /// library that compresses (the system libdeflate where it loads, by default; `.zlib` for the system zlib only).
    public func exportBundle(to out: String, since: BundleSince = .position(0), until: LogMoment? = nil, by clock: EventClock = .default,
                             layers: [String] = [], peer: String? = nil, signingKey: [UInt8]? = nil, overwrite: Bool = false,
                             blockSize: Int = BundleLayout.gzipBlockBytes, deflate: BundleDeflate = .auto,
                             progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleExportSummary {
        var options = BundleExportOptions(since: since, peer: peer, signingKey: signingKey, overwrite: overwrite, blockSize: blockSize, deflate: deflate)
        if let until {
            switch until {
            case .position(let p): options.until = p
            case .time:
                let p = try position(asOf: until, by: clock)
                guard p > 0 else { throw EditLogError(.notFound, "no event is at or before \(until) on the \(clock.rawValue) clock") }
                options.until = p
            }
        }
        if !layers.isEmpty {
            var ids = Set<Int>()
            for ref in layers { ids.insert(try schema.requireLayer(ref).id) }
            options.layers = (ids, layers)
        }
        return try BundleExport.run(store: store, to: out, options: options, progress: progress)
    }

    /// Who runs this process (`$USER`, `$LOGNAME`, else the effective user's account), for default actors.
    public static var currentUser: String? { BundleExport.currentUser() }

    /// What deflates the bundles this process exports by default: the system libdeflate's level where it loads, else
    /// zlib's.
    public static var bundleDeflater: String { BundleDeflate.auto.deflater }

    /// Reads a whole bundle, checking the container, checksums, the chain of its events, blob hashes and the
    /// signature (with `trust`, one of these keys must have signed it). Imports nothing.
    public static func verifyBundle(at path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default,
                                    progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleContents {
        let reader = try BundleReader(path: path, limits: limits)
        let total = reader.manifest.eventCount
        var done: Int64 = 0
        return try reader.read(trust: trust, event: { _ in
            done += 1
            if done % 1024 == 0 { progress?(done, total) }
        }, blob: { _ in })
    }

    /// The manifest and per-layer, per-type and per-actor counts of a bundle, checked as `verifyBundle` does.
    public static func inspectBundle(at path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default,
                                     progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleInspection {
        try BundleInspection.inspect(path: path, trust: trust, limits: limits, progress: progress)
    }

    /// The recorded exports to a peer, newest last: (from, to, bundle SHA-256, created at).
    public func bundleExports(peer: String) throws(EditLogError) -> [(from: Int64, to: Int64, sha256: String, createdAt: String)] {
        try store.read { db in try BundleExport.recorded(db, peer: peer) }
    }
}

extension EditLog {
    /// Streams this log may hold for an import's reading thread to guess where the import appends (`ChainGuesser`):
    /// their versions are held in memory for the whole import.
    static let guessedStreamLimit = 10_000

    /// Guesses where an import appends events, from this log's end; nil when it holds more than `guessedStreamLimit` streams.
    func chainGuesser() throws(EditLogError) -> ChainGuesser? {
        try read { db in try EventReading.chainGuesser(db, streamLimit: Self.guessedStreamLimit) }
    }

    /// Imports a bundle in one transaction, all or nothing: every check of `verifyBundle` (a failed one rolls the
    /// import back), then the events merged under `policy` and the blobs stored. A bundle of another schema is
    /// refused unless this log's schema has every layer and field it has (this one may have added some). Events
    /// already here (a second import, an overlapping bundle, this log's own events) are skipped.
    public func importBundle(at path: String, policy: MergePolicy = .lastInWins, trust: [[UInt8]] = [], actor: String, device: String,
                             limits: BundleLimits = .default, progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> (report: ImportReport, contents: BundleContents) {
        let reader = try BundleReader(path: path, limits: limits)
        let ours = try read { db -> String in
            guard let e = try EventReading.ownSchemaEvent(db) else {
                throw EditLogError(.corrupt, "the log has no SchemaDefined event", at: path)
            }
            return SchemaFingerprint.of(schemaPayload: e.payload)
        }
        if reader.manifest.schemaFingerprint != ours {
            let theirs: ServiceSchema
            do { theirs = try Projector.decodeSchema(reader.schema) } catch { throw EditLogError(.invalidInput, "the bundle's schema.json cannot be read: \(error.message)", at: path) }
            if let problem = schema.incompatibility(importing: theirs) {
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
        let readAhead = BundleReadAhead(reader, trust: trust, guesser: try chainGuesser())
        let report: ImportReport
        do {
            report = try importEvents(policy: policy, actor: actor, device: device, source: source, withPayloads: { event, blob in
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
            }, closing: { _ in [] }, expectedEvents: Int(clamping: total),
               // This log's own events are all here already: importing them writes nothing, the indexes included.
               indexDeferral: reader.manifest.originLogId == logId ? .never : nil)
        } catch {
            readAhead.cancel()
            throw error
        }
        return (report, readAhead.contents)
    }
}
