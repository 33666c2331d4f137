import EditLog
import Foundation

/// A replica as its events in `$replicas` tell it: created (`ReplicaCreated`), each synchronize
/// (`ReplicaSynchronized`), closed (`ReplicaUnregistered`). One reader for the service and for `editlog replicas`.
public struct ReplicaRecord: Sendable {
    public var id: String
    public var name: String
    public var user: String
    public var device: String
    public var layers: [Int]
    public var layerQueries: [String: JSONValue]
    public var geometry: JSONValue?
    public var inSR: Int64?
    public var syncModel: String
    public var syncDirection: String
    public var returnAttachments: Bool
    /// The generation the replica's data was read at.
    public var createdGen: Int64
    /// When it was created (the event's recording time) and at which position.
    public var createdAt: String
    public var position: Int64
    /// The generation the last synchronize left the client at (the created one before any).
    public var serverGen: Int64
    public var closed = false
    public var closedBy: String?
    /// Each synchronize: its position, recording time and payload.
    public var syncs: [(position: Int64, at: String, payload: JSONValue)] = []
    public var created: JSONValue

    /// Every replica of `events` (the `$replicas` stream), in creation order.
    public static func all(_ events: [RecordedEvent]) throws(EditLogError) -> [ReplicaRecord] {
        var out: [ReplicaRecord] = []
        var index: [String: Int] = [:]
        for e in events {
            guard case .replica(let type, let p) = try EventBody(e), let id = p["replicaId"]?.stringValue else { continue }
            switch type {
            case .replicaCreated:
                index[id] = out.count
                out.append(ReplicaRecord(
                    id: id, name: p["replicaName"]?.stringValue ?? "", user: p["user"]?.stringValue ?? "", device: p["device"]?.stringValue ?? "",
                    layers: p["layers"]?.arrayValue?.compactMap { $0.intValue.map(Int.init) } ?? [], layerQueries: p["layerQueries"]?.objectValue ?? [:],
                    geometry: p["geometry"].flatMap { $0.isNull ? nil : $0 }, inSR: p["inSR"]?.intValue, syncModel: p["syncModel"]?.stringValue ?? "perReplica",
                    syncDirection: p["syncDirection"]?.stringValue ?? "bidirectional", returnAttachments: p["returnAttachments"]?.boolValue ?? false,
                    createdGen: p["serverGen"]?.intValue ?? 0, createdAt: e.recordedTime, position: e.position, serverGen: p["serverGen"]?.intValue ?? 0,
                    created: p))
            case .replicaSynchronized:
                guard let i = index[id] else { continue }
                out[i].syncs.append((e.position, e.recordedTime, p))
                out[i].serverGen = e.position  // the client's next generation: past its upload
            case .replicaUnregistered:
                guard let i = index[id] else { continue }
                out[i].closed = true
                out[i].closedBy = p["by"]?.stringValue
            default: continue
            }
        }
        return out
    }

    /// The replica's events' summary for auditors (`editlog replicas show --json`, the service's replica info).
    public var json: JSONValue {
        var o = created.objectValue ?? [:]
        o["createdAt"] = .string(createdAt)
        o["position"] = .int(position)
        o["replicaServerGen"] = .int(serverGen)
        o["closed"] = .bool(closed)
        if let closedBy { o["closedBy"] = .string(closedBy) }
        o["synchronizations"] = .array(syncs.map { s in
            var x = s.payload.objectValue ?? [:]
            x["position"] = .int(s.position)
            x["at"] = .string(s.at)
            return .object(x)
        })
        return .object(o)
    }
}
