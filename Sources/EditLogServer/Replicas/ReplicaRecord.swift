import EditLog
import Foundation

/// A replica as its events in `$replicas` tell it: created (`ReplicaCreated`), each synchronize
/// (`ReplicaSynchronized`), closed (`ReplicaUnregistered`). One reader for the service and for `editlog replicas`.
public struct ReplicaRecord: Sendable {
    /// What createReplica recorded: who, which layers, queries and area, the generation, what was sent.
    public var created: ReplicaCreated
    /// When it was created (the event's recording time) and at which position.
    public var createdAt: String
    public var position: Int64
    /// The generation the last synchronize left the client at (the created one before any).
    public var serverGen: Int64
    public var closed = false
    public var closedBy: String?
    /// Each synchronize: its position, recording time and record.
    public var syncs: [(position: Int64, at: String, record: ReplicaSynchronized)] = []

    public var id: String { created.replicaId }
    public var name: String { created.replicaName }
    public var user: String { created.user }
    public var device: String { created.device }
    public var layers: [Int] { created.layers }
    public var layerQueries: [String: JSONValue] { created.layerQueries }
    public var geometry: JSONValue? { created.geometry }
    public var inSR: Int64? { created.inSR }
    public var syncModel: String { created.syncModel }
    public var syncDirection: String { created.syncDirection }
    public var returnAttachments: Bool { created.returnAttachments }
    /// The generation the replica's data was read at.
    public var createdGen: Int64 { created.serverGen }

    /// The types that say which replicas exist and which are closed. Read alone, they skip the synchronizations,
    /// which grow with every sync: the records they give have no `syncs`, and `serverGen` is the created one.
    public static let registryTypes: [EventType] = [.replicaCreated, .replicaUnregistered]

    /// Every replica of `events` (the `$replicas` stream), in creation order.
    public static func all(_ events: [RecordedEvent]) throws(EditLogError) -> [ReplicaRecord] {
        var out: [ReplicaRecord] = []
        var index: [String: Int] = [:]
        for e in events {
            switch try e.body {
            case .replicaCreated(let p):
                index[p.replicaId] = out.count
                out.append(ReplicaRecord(created: p, createdAt: e.recordedTime, position: e.position, serverGen: p.serverGen))
            case .replicaSynchronized(let p):
                guard let i = index[p.replicaId] else { continue }
                out[i].syncs.append((e.position, e.recordedTime, p))
                out[i].serverGen = e.position  // the client's next generation: past its upload
            case .replicaUnregistered(let p):
                guard let i = index[p.replicaId] else { continue }
                out[i].closed = true
                out[i].closedBy = p.by
            default: continue
            }
        }
        return out
    }

    /// The replica's events' summary for auditors (`editlog replicas show --json`, the service's replica info).
    public var json: JSONValue {
        var o = created.json.objectValue ?? [:]
        o["createdAt"] = .string(createdAt)
        o["position"] = .int(position)
        o["replicaServerGen"] = .int(serverGen)
        o["closed"] = .bool(closed)
        if let closedBy { o["closedBy"] = .string(closedBy) }
        o["synchronizations"] = .array(syncs.map { s in
            var x = s.record.json.objectValue ?? [:]
            x["position"] = .int(s.position)
            x["at"] = .string(s.at)
            return .object(x)
        })
        return .object(o)
    }
}
