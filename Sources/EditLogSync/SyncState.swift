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
    /// Per layer, the service's ObjectID to GlobalID.
    var objectIds: [Int: [Int64: String]] = [:]
    var runs = 0

    init(events: [RecordedEvent], service: String) {
        for e in events where e.payload["service"]?.stringValue == service {
            runs += 1
            if let g = e.payload["serverGen"]?.intValue { serverGen = g }
            if let d = e.payload["lastEditDate"]?.intValue { lastEditDate = max(lastEditDate ?? d, d) }
            if e.type == EventType.syncPushed.rawValue, let p = e.payload["agreedPosition"]?.intValue { agreedPosition = p }
            for (layer, pairs) in e.payload["objectIds"]?.objectValue ?? [:] {
                guard let l = Int(layer) else { continue }
                for pair in pairs.arrayValue ?? [] {
                    guard let oid = pair[0]?.intValue, let g = pair[1]?.stringValue else { continue }
                    objectIds[l, default: [:]][oid] = g
                }
            }
        }
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard let a = arrayValue, index >= 0, index < a.count else { return nil }
        return a[index]
    }
}
