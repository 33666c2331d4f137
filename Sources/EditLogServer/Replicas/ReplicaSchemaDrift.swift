import EditLog
import EditLogMerge
import Foundation

/// A replica created before a schema change (`SchemaChanged`: `schema apply`, a sync, an import) is synchronized, not
/// refused, and never has to be re-created for the change:
///
/// - **Upload.** Edits of fields the service still has are taken as always (validated against the schema in force: an
///   extended domain's new code is accepted, a narrowed domain's dropped code refused like any value outside a domain).
///   A value of a field the schema **removed since the replica was created** (it was in the replica's schema, the one
///   in force at its `replicaServerGen` of creation) is left out of the edit, and the rest of the edit is taken: each
///   such value is a recorded `field-removed` conflict (a `MergeDecided` of the feature, the service's schema the
///   winner, the upload's value and its session named), as `sync` records a device's edit of a removed field, so
///   `editlog conflicts` lists it and the value stays in the log. A field the replica never had is still refused by
///   name (an unknown field), and an edit of a layer removed since is refused by name with nothing written: there is
///   no table left to take it.
/// - **Download.** Features are sent as the service holds them now: a field added since is in the attributes of
///   every feature sent (the changed ones; `syncDirection=snapshot` sends the replica's features whole, with the new
///   field's values), a removed field is not. A layer removed since is left out of the answer. A replica whose
///   recorded `where` names a field removed since can no longer select its features: a download is refused with
///   ArcGIS's error, naming the layer, and nothing is applied (`syncDirection=upload` still goes; then a new replica).
///
/// Why not refuse and ask for a new replica, as ArcGIS asks of offline maps after most schema changes: a field crew's
/// upload would be stuck until the replica is re-created, and whatever it edited offline would have to be entered
/// again. Everything of the upload that the service can hold is taken; what it cannot is kept as a conflict. A client
/// whose local store cannot hold a field added since (ArcGIS Runtime's geodatabase keeps the schema it was created
/// with) ignores it until it re-creates its replica, as it would against ArcGIS.
struct ReplicaSchemaDrift {
    /// Per layer of the replica, the fields (lowercased name → name) its schema had that the schema in force lacks.
    var removedFields: [Int: [String: String]] = [:]
    /// Layers of the replica the schema in force no longer has (id → name).
    var removedLayers: [Int: String] = [:]

    var isEmpty: Bool { removedFields.isEmpty && removedLayers.isEmpty }

    /// What `ServiceSchema.changes` (the one diff of two schemas) says was removed of the replica's layers.
    init(replicaSchema then: ServiceSchema, now: ServiceSchema, layers: [Int]) {
        let wanted = Set(layers)
        for c in then.changes(to: now) where wanted.contains(c.layer) {
            switch c.kind {
            case .layerRemoved: removedLayers[c.layer] = c.layerName
            case .fieldRemoved: if let f = c.field { removedFields[c.layer, default: [:]][f.lowercased()] = f }
            default: continue
            }
        }
    }

    /// A value an upload held for a removed field, left out of its edit.
    struct Dropped {
        var layer: Int
        var globalId: String
        var field: String
        var value: JSONValue
        /// The last value this log held for the field (read before the upload is recorded).
        var base: JSONValue = .null
    }

    /// Takes the values of removed fields out of `features` (an upload's adds or updates of `layer`), by GlobalID.
    func drop(from features: inout [JSONValue], layer: LayerSchema) -> [Dropped] {
        guard let gone = removedFields[layer.id] else { return [] }
        var out: [Dropped] = []
        for i in features.indices {
            guard var f = features[i].objectValue, var attributes = f["attributes"]?.objectValue else { continue }
            let gid = layer.globalIdField.flatMap { g in attributes.first { $0.key.lowercased() == g.lowercased() }?.value.stringValue }
                .flatMap(GlobalID.normalize)
            for key in attributes.keys.sorted() {
                guard let name = gone[key.lowercased()] else { continue }
                let v = attributes.removeValue(forKey: key) ?? .null
                if let gid { out.append(Dropped(layer: layer.id, globalId: gid, field: name, value: v)) }
            }
            f["attributes"] = .object(attributes)
            features[i] = .object(f)
        }
        return out
    }
}

extension FeatureService {
    /// How the schema in force differs from the one `rep` was created with (see `ReplicaSchemaDrift`).
    func schemaDrift(of rep: ReplicaRecord) throws -> ReplicaSchemaDrift {
        let (then, now) = try handles.read { log in (try log.schemaVersion(atOrBefore: rep.createdGen).schema, try log.schemaInForce().schema) }
        return ReplicaSchemaDrift(replicaSchema: then, now: now, layers: rep.layers)
    }

    /// The bases of `dropped`: each field's last value in this log (its history keeps a removed field's values).
    func withBases(_ dropped: [ReplicaSchemaDrift.Dropped]) throws -> [ReplicaSchemaDrift.Dropped] {
        var histories: [String: [HistoryEntry]] = [:]
        return try dropped.map { d in
            var d = d
            if histories[d.globalId] == nil {
                // A feature the upload adds has no history here yet.
                histories[d.globalId] = try handles.read { log in try log.objectId(layer: String(d.layer), globalId: d.globalId) == nil ? [] : try log.history(globalId: d.globalId).entries }
            }
            d.base = histories[d.globalId]?.last { $0.field == d.field }?.new ?? .null
            return d
        }
    }

    /// The `field-removed` conflicts of the values `dropped` left out of the features the upload recorded, for
    /// `overwriteDecisions`: the service's schema (no value: the field is gone) wins over the upload's value.
    func removedFieldConflicts(_ dropped: [ReplicaSchemaDrift.Dropped], recorded: Set<String>, upload events: [RecordedEvent], replicaId: String) -> [Conflict] {
        dropped.filter { recorded.contains($0.globalId) }.map { d in
            let stream = StreamName.feature(layer: d.layer, globalId: d.globalId)
            let committed = events.last { $0.stream == stream && $0.type == EventType.sessionCommitted.rawValue && $0.cause == Cause.replica(replicaId) }
            return Conflict(id: handles.ids.next().lowercasedString, kind: .fieldRemoved, layer: d.layer, globalId: d.globalId, field: d.field,
                            base: d.base, local: SideValue(value: .null, writer: nil), remote: SideValue(value: d.value, writer: committed.map(Author.init)),
                            policy: .lastInWins, rule: .upload, winner: .local)
        }
    }
}
