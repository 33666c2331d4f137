import EditLog

/// What earlier runs recorded for one service, folded from the `$sync` stream: the last pulled server
/// generation, the last local position both sides agreed on, and the service's ObjectIDs of features
/// (extractChanges names deletes by ObjectID, which is per database; sync keys everything by GlobalID).
struct SyncState {
    /// The server generation the last pull reached (nil: never pulled).
    var serverGen: Int64?
    /// The latest edit date pulled (for services without change tracking), epoch milliseconds.
    var lastEditDate: Int64?
    /// The local position at which the last push left the service equal to this log (0: never).
    var agreedPosition: Int64 = 0
    /// Whether a pull took a snapshot of the service (every feature read, the log's base made what the service held).
    var snapshotTaken = false
    /// The replica this log synchronizes through (a service with Sync but no change tracking).
    var replicaId: String?
    /// Per layer, the service's ObjectID to GlobalID.
    var objectIds: [Int: [Int64: String]] = [:]
    var runs = 0

    /// Folded from `log`'s `$sync` stream, an event at a time: the stream keeps every pull's list of changes, so
    /// it grows with every change ever pulled, and only the fold's result is held.
    init(log: EditLog, service: String) throws(EditLogError) {
        var state = SyncState()
        try log.forEachStreamEvent(StreamName.sync, types: [.syncPulled, .syncPushed]) { e in try state.fold(e, service: service) }
        self = state
    }

    private init() {}

    private mutating func fold(_ e: RecordedEvent, service: String) throws(EditLogError) {
        let mappings: ObjectIdMappings
        switch try e.body {
        case .syncPulled(let x):
            guard x.service == service else { return }
            if let g = x.serverGen { serverGen = g }
            if x.mode == PulledChanges.snapshot { snapshotTaken = true }
            if let id = x.replicaId { replicaId = id }
            if let d = x.lastEditDate { lastEditDate = max(lastEditDate ?? d, d) }
            mappings = x.objectIds
        case .syncPushed(let x):
            guard x.service == service else { return }
            if let g = x.serverGen { serverGen = g }
            agreedPosition = x.agreedPosition
            mappings = x.objectIds
        default: return
        }
        runs += 1
        for (l, pairs) in mappings.byLayer { for (oid, g) in pairs { objectIds[l, default: [:]][oid] = g } }
    }
}
