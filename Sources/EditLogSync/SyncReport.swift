import EditLog

/// How `editlog sync` runs.
public struct SyncOptions: Sendable {
    public var policy: MergePolicy
    /// Plan only: pull into a scratch copy of the log, merge there, compute the push, send nothing, write nothing.
    public var dryRun: Bool
    /// Who runs the sync (the actor of its decisions and state events) and from where.
    public var actor: String
    public var device: String
    /// Features per query or applyEdits request.
    public var batchSize: Int
    /// Server generations asked for in one `extractChanges` request: a window of W generations holds at most W
    /// changes on a service whose generation moves with each edit (the answer stays within what a server lists
    /// at once; `editlog serve` refuses more than 30,000 ObjectIDs in one answer).
    public var generationWindow: Int64 = 20_000
    /// Progress of long reads (a snapshot's pages): what, done, total. Nil: none shown.
    public var progress: (@Sendable (String, Int64, Int64) -> Void)?
    /// Called at each step a crash could interrupt (`pulled-window`, `pulled`, `pushed-request-N`, `before-record`): tests throw or
    /// kill the process there to prove a later run finishes the work (nil in production).
    public var failpoint: (@Sendable (String) throws -> Void)?
    /// Tests only: a window of a pull is built completely (from the state before the import of the window ahead
    /// of it) before that import starts, instead of at the same time: the sessions of features that import
    /// touched are then always built again after it, the case timing decides in production.
    public var buildNextWindowFirst = false
    /// Tests only: called as each window of a pull (`extractChanges`) imports, with the changes it imports and the
    /// per-change facts the pull holds in memory beyond the windows in flight (the deletes kept for the last
    /// window, the ObjectIDs recorded by earlier windows): a pull must not hold every change it pulled.
    public var windowProbe: (@Sendable (_ windowChanges: Int, _ heldAcrossWindows: Int) -> Void)?

    public init(policy: MergePolicy = .lastInWins, dryRun: Bool = false, actor: String = "editlog-sync", device: String = "editlog-sync", batchSize: Int = 100) {
        self.policy = policy; self.dryRun = dryRun; self.actor = actor; self.device = device; self.batchSize = batchSize
    }
}

/// One feature change pulled or pushed.
public struct SyncChange: Sendable, Hashable {
    public var layer: Int
    public var globalId: String
    /// add, update, delete (and for attachments: attach, rename, detach).
    public var kind: String
    public var fields: [String]
    public var objectId: Int64?

    public var json: JSONValue {
        .object(["layer": .int(Int64(layer)), "globalId": .string(globalId), "kind": .string(kind),
                 "fields": .array(fields.map(JSONValue.string)), "objectId": objectId.map(JSONValue.int) ?? .null])
    }
}

/// What a sync did (or, with `--dry-run`, would do).
public struct SyncReport: Sendable {
    public var service: String
    public var dryRun: Bool
    public var policy: MergePolicy
    /// extractChanges, or query (by the edit date field, for services without change tracking).
    public var mode = "extractChanges"
    /// Whether the pull read every feature first (a first sync, or a generation older than the service's minServerGen).
    public var snapshot = false
    public var fromServerGen: Int64?
    public var toServerGen: Int64?
    /// Every change pulled, in order (kept on disk: see `SyncChangeList`).
    public internal(set) var pulled = SyncChangeList()
    public var pulledAttachments = 0
    public var imported = 0
    public var conflicts: [Conflict] = []
    public var pushed: [SyncChange] = []
    public var pushedAttachments = 0
    /// Features kept here that the service deleted and can no longer take back (not re-created there).
    public var notPushed: [SyncChange] = []
    /// Events this run appended to the log (0 in a dry run and in a run with nothing new).
    public var eventsWritten: Int64 = 0
    /// Pulls made again because the service changed a feature to push after the pull (their changes are in
    /// `pulled`, `imported` and `conflicts` with the first pull's).
    public var repulls = 0
    /// The schema change this run recorded before it pulled (the service's definitions changed), and its position.
    public var schemaChanges: [SchemaChange] = []
    public var schemaPosition: Int64?

    public var json: JSONValue {
        .object([
            "service": .string(service), "dryRun": .bool(dryRun), "policy": .string(policy.rawValue), "mode": .string(mode), "snapshot": .bool(snapshot),
            "fromServerGen": fromServerGen.map(JSONValue.int) ?? .null, "toServerGen": toServerGen.map(JSONValue.int) ?? .null,
            "pulled": .array(pulled.map(\.json)), "pulledAttachments": .int(Int64(pulledAttachments)), "imported": .int(Int64(imported)),
            "conflicts": .array(conflicts.map(\.json)), "pushed": .array(pushed.map(\.json)), "pushedAttachments": .int(Int64(pushedAttachments)),
            "notPushed": .array(notPushed.map(\.json)), "eventsWritten": .int(eventsWritten), "repulls": .int(Int64(repulls)),
            "schemaChanges": .array(schemaChanges.map(\.json)), "schemaPosition": schemaPosition.map(JSONValue.int) ?? .null,
        ])
    }
}
