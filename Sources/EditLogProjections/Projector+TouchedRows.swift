import EditLogCore
import EditLogMerge
import EditLogStore
import GRDB

/// The rows of the projection tables that `Projector.apply` reads or writes for some events, by key: what a state
/// built over a checkpoint's tables must copy from them before the events apply (`Replay.overlay`). It follows
/// `project` and `write`: a new way an event reaches a row belongs here too.
public struct TouchedRows: Sendable {
    /// GlobalIDs of features whose row an effect writes (in any layer), and whose attachments a delete updates.
    public var features: Set<String> = []
    /// Attachments an effect names by GlobalID (added, renamed, removed, revived, detached).
    public var attachments: Set<String> = []
    /// Sessions started, stepped or ended (`p_sessions` by id).
    public var sessions: Set<String> = []
    /// Scripts recorded (`p_scripts` by SHA-256).
    public var scripts: Set<String> = []

    public init() {}

    /// Adds the rows `e` reaches, given its step (`EffectFold.next`) as the projector reads it.
    public mutating func add(_ e: RecordedEvent, _ step: EffectFold.Step) {
        if let s = e.session { sessions.insert(s) }
        if case .scriptRecorded(let s) = step.body { scripts.insert(s.sha256) }
        guard let f = step.effect else { return }
        features.insert(f.globalId)
        attachments.formUnion(f.revivedAttachments)
        attachments.formUnion(f.detachedAttachments)
        if let a = f.attachments {
            for s in a.added { attachments.insert(s.attachmentId) }
            for r in a.renamed { attachments.insert(r.attachmentId) }
            for r in a.removed { attachments.insert(r.attachmentId) }
        }
    }
}

extension TouchedRows {
    /// The rows events `after+1 ... through` of `source` reach, each read as `Replay.apply` hands it to the projector
    /// (this log's decision recorded at `after` held for the next event).
    public static func of(_ source: Database, after: Int64, through: Int64) throws -> TouchedRows {
        var fold = EffectFold(ownLog: try EventStore.logId(in: source))
        if after > 0, let last = try EventReading.first(source, where: "position = ?", arguments: [after]) { try fold.resume(after: last) }
        var rows = TouchedRows()
        try EventReading.forEach(source, after: after, where: "position <= ?", arguments: [through], forProjection: true) { e in
            rows.add(e, try fold.next(e))
        }
        return rows
    }
}
