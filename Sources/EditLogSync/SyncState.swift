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
    /// The replica this log synchronizes through (a service with Sync but no change tracking).
    var replicaId: String?
    /// Per layer, the service's ObjectID to GlobalID.
    var objectIds: [Int: [Int64: String]] = [:]
    var runs = 0

    /// Folded from `log`'s `$sync` stream one payload at a time, each read in parts (`JSONSlicer`): its small
    /// members parsed and read as the event's body reads them, its ObjectIDs a pair at a time, its lists of
    /// changes and results skipped. A snapshot's `SyncPulled` names every feature's ObjectID: never one JSON tree.
    init(log: EditLog, service: String) throws(EditLogError) {
        let skipped: Set<String> = ["objectIds", "changes", "conflicts", "pushed", "results"]
        var state = SyncState()
        try log.forEachPayload(StreamName.sync) { position, type, bytes in
            guard type == EventType.syncPulled.rawValue || type == EventType.syncPushed.rawValue else { return }
            let slicer = JSONSlicer(bytes: bytes, url: "position \(position)")
            guard let members = try? slicer.members(try slicer.document()) else {
                throw EditLogError(.corrupt, "payload is not valid JSON", at: "position \(position)")
            }
            var small: [String: JSONValue] = [:]
            var objectIds: Range<Int>?
            for (k, r) in members {
                if k == "objectIds" { objectIds = r } else if !skipped.contains(k) { small[k] = try slicer.value(r) }
            }
            let p = PayloadReader(.object(small), type: type, position: position)
            guard try p.string("service") == service else { return }
            if type == EventType.syncPulled.rawValue {
                if let g = p.optional("serverGen")?.intValue { state.serverGen = g }
                if let id = p.optional("replicaId")?.stringValue { state.replicaId = id }
                if let d = p.optional("lastEditDate")?.intValue { state.lastEditDate = max(state.lastEditDate ?? d, d) }
            } else {
                if let g = p.optional("serverGen")?.intValue { state.serverGen = g }
                state.agreedPosition = p.optional("agreedPosition")?.intValue ?? 0
            }
            state.runs += 1
            // As `ObjectIdMappings` reads them: `{"<layer>": [[ObjectID, GlobalID], …]}` (anything but an object is
            // none), later pairs over earlier ones.
            guard let objectIds, let layers = try slicer.members(objectIds) else { return }
            for (layer, list) in layers {
                guard let l = Int(layer), let pairs = try slicer.elements(list) else { throw p.corrupt("payload \"objectIds.\(layer)\" is not a layer's list") }
                for r in pairs {
                    guard let a = try slicer.value(r).arrayValue, a.count == 2, let oid = a[0].intValue, let g = a[1].stringValue else {
                        throw p.corrupt("payload \"objectIds.\(layer)\" holds an entry that is not [ObjectID, GlobalID]")
                    }
                    state.objectIds[l, default: [:]][oid] = g
                }
            }
        }
        self = state
    }

    private init() {}
}
