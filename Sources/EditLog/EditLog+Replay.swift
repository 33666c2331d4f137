import EditLogCore
import EditLogExport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

@_exported import enum EditLogExport.ExportFormat
@_exported import struct EditLogExport.ReplayOutcome
@_exported import struct EditLogExport.ExportSummary
@_exported import struct EditLogExport.Checkpoint
@_exported import struct EditLogExport.MomentIndex

/// The dataset as of any moment, and exports (`replay`, `export`, `checkpoint`).
extension EditLog {
    /// The checkpoints of this log (the sidecar folder `<log>.checkpoints/`).
    var checkpointStore: CheckpointStore { CheckpointStore(logPath: path, logId: logId) }

    /// The position a moment names (a time: the last event at or before it, by `basis`; 0 when none is).
    public func position(asOf point: LogMoment, by basis: EventClock = .default) throws(EditLogError) -> Int64 {
        try read { db in try Replay.position(db, point, by: basis) }
    }

    /// Replays the log up to a moment (into a scratch file in the temporary directory, removed afterwards) and
    /// returns what it did, with the digest of the tables. `progress` gets (events applied, events to apply) after
    /// the checkpoint the replay starts from.
    public func replayDigest(asOf point: LogMoment, by basis: EventClock = .default, useCheckpoints: Bool = true,
                             progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> ReplayOutcome {
        let scratch = NSTemporaryDirectory() + "/editlog-replay-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        return try replayed(asOf: point, by: basis, useCheckpoints: useCheckpoints, scratch: scratch, digest: true, progress: progress) { _, _, outcome in outcome }
    }

    /// Materializes every layer and table as it was at a moment and writes it to `out` (format by extension).
    /// `progress` gets (events applied, events to apply) while replaying from the checkpoint; `writeProgress`
    /// (rows written, rows to write) while writing. With `digest`, the outcome has the replayed tables' digest (a second
    /// read of every row).
    public func replay(asOf point: LogMoment, by basis: EventClock = .default, to out: String, layers: [String] = [],
                       useCheckpoints: Bool = true, overwrite: Bool = false, digest: Bool = false, progress: ((Int64, Int64) -> Void)? = nil,
                       writeProgress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> (ReplayOutcome, ExportSummary) {
        let format = try Self.format(out)
        if (format == .sqlite || format == .gpkg) && !overwrite && FileManager.default.fileExists(atPath: out) {
            throw EditLogError(.conflict, "\(out) already exists (--force to replace it)")
        }
        // The state is replayed into a scratch file beside the output; a .sqlite output is that file itself.
        var base = out
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        let scratch = base + ".replay-\(getpid())"
        return try replayed(asOf: point, by: basis, useCheckpoints: useCheckpoints, scratch: scratch, digest: digest, progress: progress) { log, state, outcome in
            if format == .sqlite {
                let summary = try state.writeWithoutTransaction { db in
                    try Self.keepLayers(log, state: db, through: outcome.position, layers: layers)
                }
                try state.close()
                try Exporter.place(scratch, at: out, overwrite: overwrite)
                let n = Int64(summary.features.map(\.count).reduce(0, +))
                writeProgress?(n, n)
                return (outcome, ExportSummary(format: .sqlite, files: [out], features: summary.features))
            }
            let summary = try state.read { db in
                try Self.write(log, state: db, through: outcome.position, layers: layers, to: out, format: format, overwrite: overwrite,
                               progress: writeProgress)
            }
            return (outcome, summary)
        }
    }

    /// Writes the live state (the log's projections) to `out` (format by extension). `progress` gets (rows written,
    /// rows to write).
    public func export(to out: String, layers: [String] = [], overwrite: Bool = false,
                       progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> ExportSummary {
        let format = try Self.format(out)
        return try read { db in
            try Self.write(db, state: db, through: try EventReading.count(db), layers: layers, to: out, format: format, overwrite: overwrite,
                           progress: progress)
        }
    }

    /// Writes the missing checkpoints at every multiple of `every` events, incrementally.
    public func createCheckpoints(every: Int64) throws(EditLogError) -> [Checkpoint] {
        let store = checkpointStore
        return try read { db in try store.create(log: db, every: every) }
    }

    /// The checkpoints present, by position.
    public func checkpoints() throws(EditLogError) -> [Checkpoint] {
        do { return try checkpointStore.list() } catch { throw EditLogError.wrapping(error, at: path) }
    }

    /// Checks every checkpoint against the log and its own digest: the problems, one line each.
    public func verifyCheckpoints() throws(EditLogError) -> [String] {
        let store = checkpointStore
        return try read { db in try store.verify(log: db) }
    }

    // MARK: -

    static func format(_ out: String) throws(EditLogError) -> ExportFormat {
        guard let f = ExportFormat.of(path: out) else {
            throw EditLogError(.invalidInput, "--out \"\(out)\" must end in .sqlite, .gpkg, .geojson or .csv")
        }
        return f
    }

    /// Replays into the scratch file `scratch` (removed afterwards unless `body` renamed it) and hands the log, the
    /// open state and the outcome to `body`.
    func replayed<T>(asOf point: LogMoment, by basis: EventClock, useCheckpoints: Bool, scratch: String, digest: Bool, progress: ((Int64, Int64) -> Void)?,
                     _ body: (Database, DatabaseQueue, ReplayOutcome) throws -> T) throws(EditLogError) -> T {
        let store = useCheckpoints ? checkpointStore : nil
        return try read { db in
            let p = try Replay.position(db, point, by: basis)
            let (state, first) = try Replay.materialize(db, through: p, file: scratch, checkpoints: store, digest: digest, progress: progress)
            defer {
                try? state.close()
                Replay.removeScratch(scratch)
            }
            var outcome = first
            if basis == .client, case .time(let t) = point { outcome.laterClientEvents = try Replay.laterClientEvents(db, through: p, time: t) }
            return try body(db, state, outcome)
        }
    }

    /// A `.sqlite` replay: drops the `p_layer_` tables of the layers not asked for and counts the live features of
    /// the others (the summary `write` gives).
    static func keepLayers(_ log: Database, state: Database, through position: Int64, layers refs: [String]) throws -> ExportSummary {
        guard let schemaEvent = try Replay.schemaEvent(log, atOrBefore: position) else {
            throw EditLogError(.notFound, "the log has no schema at or before position \(position)")
        }
        guard let definitions = try schemaEvent.body.schemaDefinitions else { throw schemaEvent.corrupt("is not a schema event") }
        let layers = try Exporter.layers(refs, schema: try definitions.decode(), definitions: definitions)
        let keep = Set(layers.map(\.table))
        try ProjectionTables.dropLayerTables(state, keeping: keep)
        var summary = ExportSummary(format: .sqlite)
        for l in layers { summary.features.append((l.schema.name, try ProjectionTables.liveFeatureCount(state, table: l.table))) }
        return summary
    }

    static func write(_ log: Database, state: Database, through position: Int64, layers refs: [String], to out: String,
                      format: ExportFormat, overwrite: Bool, progress: ((Int64, Int64) -> Void)?) throws -> ExportSummary {
        guard let schemaEvent = try Replay.schemaEvent(log, atOrBefore: position) else {
            throw EditLogError(.notFound, "the log has no schema at or before position \(position)")
        }
        guard let definitions = try schemaEvent.body.schemaDefinitions else { throw schemaEvent.corrupt("is not a schema event") }
        let layers = try Exporter.layers(refs, schema: try definitions.decode(), definitions: definitions)
        let lastChange = try EventReading.recordedTime(log, position: position) ?? schemaEvent.recordedTime
        return try Exporter.write(state, layers: layers, to: out, format: format, lastChange: lastChange, overwrite: overwrite, progress: progress)
    }
}
