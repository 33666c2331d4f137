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

/// The dataset as of any moment, and exports (`replay`, `export`, `checkpoint`).
extension EditLog {
    /// The checkpoints of this log (the sidecar folder `<log>.checkpoints/`).
    var checkpointStore: CheckpointStore { CheckpointStore(logPath: path, logId: logId) }

    /// The position a moment names (a time: the last event at or before it, by `basis`; 0 when none is).
    public func position(asOf point: LogMoment, by basis: EventClock = .default) throws(EditLogError) -> Int64 {
        try read { db in try Replay.position(db, point, by: basis) }
    }

    /// Replays the log up to a moment in memory and returns what it did, with the digest of the tables.
    /// `progress` gets (events applied, events to apply) after the checkpoint the replay starts from.
    public func replayDigest(asOf point: LogMoment, by basis: EventClock = .default, useCheckpoints: Bool = true,
                             progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> ReplayOutcome {
        try replayed(asOf: point, by: basis, useCheckpoints: useCheckpoints, progress: progress) { _, _, outcome in outcome }
    }

    /// Materializes every layer and table as it was at a moment and writes it to `out` (format by extension).
    /// `progress` gets (events applied, events to apply) while replaying from the checkpoint; `writeProgress`
    /// (rows written, rows to write) while writing.
    public func replay(asOf point: LogMoment, by basis: EventClock = .default, to out: String, layers: [String] = [],
                       useCheckpoints: Bool = true, overwrite: Bool = false, progress: ((Int64, Int64) -> Void)? = nil,
                       writeProgress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> (ReplayOutcome, ExportSummary) {
        let format = try Self.format(out)
        return try replayed(asOf: point, by: basis, useCheckpoints: useCheckpoints, progress: progress) { log, state, outcome in
            let summary = try Self.write(log, state: state, through: outcome.position, layers: layers, to: out, format: format, overwrite: overwrite,
                                         progress: writeProgress)
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

    func replayed<T>(asOf point: LogMoment, by basis: EventClock, useCheckpoints: Bool, progress: ((Int64, Int64) -> Void)?,
                     _ body: (Database, Database, ReplayOutcome) throws -> T) throws(EditLogError) -> T {
        let store = useCheckpoints ? checkpointStore : nil
        return try read { db in
            let p = try Replay.position(db, point, by: basis)
            let memory = try DatabaseQueue()
            return try memory.write { state in
                var outcome = try Replay.materialize(db, through: p, into: state, checkpoints: store, progress: progress)
                if basis == .client, case .time(let t) = point { outcome.laterClientEvents = try Replay.laterClientEvents(db, through: p, time: t) }
                return try body(db, state, outcome)
            }
        }
    }

    static func write(_ log: Database, state: Database, through position: Int64, layers refs: [String], to out: String,
                      format: ExportFormat, overwrite: Bool, progress: ((Int64, Int64) -> Void)?) throws -> ExportSummary {
        guard let schemaEvent = try Replay.schemaEvent(log, atOrBefore: position) else {
            throw EditLogError(.notFound, "the log has no schema at or before position \(position)")
        }
        let schema = try Projector.decodeSchema(schemaEvent.payload)
        let layers = try Exporter.layers(refs, schema: schema, schemaPayload: schemaEvent.payload)
        let lastChange = try String.fetchOne(log, sql: "SELECT recorded_time FROM events WHERE position = ?", arguments: [position]) ?? schemaEvent.recordedTime
        return try Exporter.write(state, layers: layers, to: out, format: format, lastChange: lastChange, overwrite: overwrite, progress: progress)
    }
}
