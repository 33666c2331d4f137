import EditLogCore
import EditLogMerge

/// The rows of the projection tables that `Projector.apply` reads or writes for some events, by key: what a state
/// built over a checkpoint's tables must copy from them before the events apply (`Replay.overlay`). It follows
/// `project` and `write`: a new way an event reaches a row belongs here too. A session the events start, and a
/// feature they create, are left out (with their later events): such a row is not in the checkpoint, as a log
/// starts a session and creates a feature once.
public struct TouchedRows: Sendable {
    /// GlobalIDs of features whose row an effect writes, by layer (the table it writes).
    public var features: [Int: Set<String>] = [:]
    /// GlobalIDs of deleted features (of every layer): a delete updates their attachments by parent.
    public var parents: Set<String> = []
    /// Attachments an effect names by GlobalID (added, renamed, removed, revived, detached).
    public var attachments: Set<String> = []
    /// Sessions stepped or ended (`p_sessions` by id).
    public var sessions: Set<String> = []
    /// Scripts recorded (`p_scripts` by SHA-256).
    public var scripts: Set<String> = []
    /// Sessions started and features created by the events so far.
    private var started: Set<String> = [], created: Set<String> = []

    public init() {}

    /// Adds the rows `e` reaches, given its step (`EffectFold.next`) as the projector reads it.
    public mutating func add(_ e: RecordedEvent, _ step: EffectFold.Step) {
        if let s = e.session, !started.contains(s) {
            if case .sessionStarted = step.body { started.insert(s) } else { sessions.insert(s) }
        }
        if case .scriptRecorded(let s) = step.body { scripts.insert(s.sha256) }
        guard let f = step.effect else { return }
        if f.row == .create, features[f.layer]?.contains(f.globalId) != true { created.insert(f.globalId) }
        if !created.contains(f.globalId) {
            features[f.layer, default: []].insert(f.globalId)
            if f.row == .delete { parents.insert(f.globalId) }
        }
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
    /// The rows `events` reach, each read as `Projector.apply` reads it after event `last` (this log's decision
    /// recorded there held for the next event), in log `logId`.
    public static func of(_ events: [RecordedEvent], after last: RecordedEvent?, logId: String?) throws -> TouchedRows {
        var fold = EffectFold(ownLog: logId)
        if let last { try fold.resume(after: last) }
        var rows = TouchedRows()
        for e in events { rows.add(e, try fold.next(e)) }
        return rows
    }
}
