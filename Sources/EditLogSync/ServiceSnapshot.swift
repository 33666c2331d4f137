import EditLog

/// A live FeatureServer read whole, for `editlog init DB --service URL`: its layer definitions and every feature
/// of every layer (paged as each layer allows). Attachments are not read: a baseline has none, and the log's first
/// `sync` (a snapshot) brings them as the service's changes.
public struct ServiceSnapshot: Sendable {
    /// The `/layers` answer (layers and tables), as `init` takes it from a file.
    public var layers: JSONValue
    /// One feature set per layer (the `query` answer's shape), for the baseline.
    public var sets: [BaselineSet]
    /// The generation the root named before the read (nil: the service does not track changes).
    public var serverGen: Int64?
    public var features: Int { sets.reduce(0) { $0 + ($1.json["features"]?.arrayValue?.count ?? 0) } }

    /// Reads the service behind `client`; `progress` gets (features read, features in all).
    public static func read(_ client: FeatureServiceClient, data: Bool = true,
                            progress: (@Sendable (Int64, Int64) -> Void)? = nil) async throws(EditLogError) -> ServiceSnapshot {
        let (root, layers, schema) = try await client.definitions()
        let gen = FeatureServiceClient.serverGens(root: root).values.map(\.current).max()
        var snap = ServiceSnapshot(layers: layers, sets: [], serverGen: gen)
        guard data else { return snap }
        let limits = LayerReadLimits.of(layers: layers)
        var total: Int64 = 0, done: Int64 = 0
        if progress != nil {
            for layer in schema.layers {
                total += try await client.json("\(layer.id)/query", [("where", "1=1"), ("returnCountOnly", "true")], post: true)["count"]?.intValue ?? 0
            }
            progress?(0, total)
        }
        for layer in schema.layers {
            var features: [JSONValue] = []
            let l = limits[layer.id] ?? LayerReadLimits(objectIdField: layer.objectIdField ?? "OBJECTID")
            try await client.queryAll(layer: layer.id, where: "1=1", returnGeometry: !layer.isTable, limits: l) { page throws(EditLogError) in
                for f in page {
                    guard RemoteValues.feature(f, layer: layer) != nil else {
                        throw EditLogError(.invalidInput, "a \(layer.name) feature has no GlobalID: \(f.serialized().prefix(160))", at: client.baseURL + "/\(layer.id)/query")
                    }
                    // The baseline takes the layer's own fields; the ObjectID is per database and stays behind.
                    var attrs = f["attributes"]?.objectValue ?? [:]
                    if let oidField = layer.objectIdField { attrs = attrs.filter { $0.key.lowercased() != oidField.lowercased() } }
                    var out: [String: JSONValue] = ["attributes": .object(attrs)]
                    if let g = f["geometry"], !g.isNull { out["geometry"] = g }
                    features.append(.object(out))
                }
                done += Int64(page.count)
                progress?(done, max(total, done))
            }
            snap.sets.append(BaselineSet(name: client.baseURL + "/\(layer.id)", layer: String(layer.id), json: ["features": .array(features)]))
        }
        return snap
    }
}
