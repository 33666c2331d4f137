import EditLogCore
import EditLogMerge
import EditLogStore
import GRDB

/// The events after `from` up to `to` (positions, or times on `clock`), optionally of one layer: the one scan that
/// `diff` and the report read a window through.
struct LogWindow {
    let from: LogMoment
    let to: LogMoment
    let clock: EventClock
    var layer: Int? = nil

    /// A position window starts the scan at `from` (the rowid), so the work grows with the changes only.
    var after: Int64 { if case .position(let p) = from { p } else { 0 } }

    /// Calls `body` for each event of `types` in the window, in position order. `progress` gets (positions scanned,
    /// positions in the window) as the scan moves and at the end.
    func forEach(_ db: Database, types: [EventType], progress: ((Int64, Int64) -> Void)? = nil, _ body: (RecordedEvent) throws -> Void) throws {
        var parts = ["type IN (" + types.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"]
        var args: StatementArguments = []
        let (a, aa) = from.sql(clock: clock, after: true), (b, ba) = to.sql(clock: clock, after: false)
        parts += [a, b]; args += aa; args += ba
        if let layer { parts.append("stream >= ? AND stream < ?"); args += ["\(layer):", "\(layer);"] }
        let scan = try ScanProgress(db, after: after, to: to, report: progress)
        try EventReading.forEach(db, after: after, where: parts.joined(separator: " AND "), arguments: args) {
            try body($0)
            scan?.at($0.position)
        }
        scan?.finish()
    }

    /// `DiffFold` over the window's feature-changing events, this log's decisions about imported events applied
    /// (`DecisionLookup`), then editor tracking read at `from` (`resolveTracking`). The fold runs on a second thread
    /// while the events are read and parsed, except over a short window of positions: a thread costs more than it
    /// saves there (serve's extractChanges diffs each layer over a few generations). `pipelined: false` folds on the
    /// reading thread whatever the window (the report: the events in flight between the threads weigh on its peak memory).
    /// `timeline`: the log's schemas (the window's end names the layers and fields; each event is read with its layer
    /// then; a field removed in the window is no change).
    /// `observe`, when given, sees every event the scan reads, of the folded types and of `also`, in position order on
    /// the reading thread, after the fold took it: one scan serves the fold and a second reader (the report's figures).
    func fold(_ db: Database, timeline: SchemaTimeline, fields: Bool, pipelined: Bool = true, progress: ((Int64, Int64) -> Void)? = nil,
              also: [EventType] = [], observe: (RecordedEvent) throws -> Void = { _ in }) throws -> DiffFold {
        var decisions = try DecisionLookup(db, from: from)
        var fold = DiffFold(schema: timeline.schema(at: to, clock: clock), fields: fields, ownLog: decisions.ownLog, timeline: timeline,
                            removed: timeline.removedFields(after: from, upTo: to, clock: clock))
        let short = if case .position(let p) = from, case .position(let q) = to { q - p <= DiffFoldPipeline.inlineWindow } else { false }
        let pipeline = pipelined && !short ? DiffFoldPipeline(fold) : nil
        do {
            try forEach(db, types: also + DiffFold.foldedTypes, progress: progress) {
                let d = try decisions.decision(about: $0)
                if let pipeline { try pipeline.add($0, decision: d) } else { try fold.apply($0, decision: d) }
                try observe($0)
            }
        } catch {
            // The consumer thread is closed whatever the reader's error; the reader's is the one reported.
            _ = try? pipeline?.finish()
            throw error
        }
        if let pipeline { fold = try pipeline.finish() }
        try fold.resolveTracking(Audit.trackingStart(db, at: from, clock: clock, ownLog: decisions.ownLog))
        return fold
    }
}
