import EditLog

/// What a layer's definition says about reading it: the most features one `query` answers (`maxRecordCount`)
/// and whether it pages with `resultOffset`/`resultRecordCount` (`advancedQueryCapabilities.supportsPagination`).
public struct LayerReadLimits: Sendable, Hashable {
    public var maxRecordCount: Int
    public var supportsPagination: Bool
    public var objectIdField: String

    public init(maxRecordCount: Int = 1000, supportsPagination: Bool = true, objectIdField: String = "OBJECTID") {
        self.maxRecordCount = max(1, maxRecordCount); self.supportsPagination = supportsPagination; self.objectIdField = objectIdField
    }

    /// From a layer definition (`/layers` or `/<id>`); a definition without `maxRecordCount` is read 1,000 at a
    /// time (ArcGIS's usual figure), one without a pagination flag by ObjectID batches (which every version takes).
    public init(definition d: JSONValue, objectIdField: String?) {
        let pages = d["advancedQueryCapabilities"]?["supportsPagination"]?.boolValue ?? d["supportsPagination"]?.boolValue ?? false
        self.init(maxRecordCount: Int(d["maxRecordCount"]?.intValue ?? 1000), supportsPagination: pages,
                  objectIdField: objectIdField ?? d["objectIdField"]?.stringValue ?? "OBJECTID")
    }

    /// Per layer id, from a `/layers` answer (layers and tables).
    public static func of(layers answer: JSONValue) -> [Int: LayerReadLimits] {
        var out: [Int: LayerReadLimits] = [:]
        for d in (answer["layers"]?.arrayValue ?? []) + (answer["tables"]?.arrayValue ?? []) {
            guard let id = d["id"]?.intValue else { continue }
            let oid = (d["fields"]?.arrayValue ?? []).first { $0["type"]?.stringValue == "esriFieldTypeOID" }?["name"]?.stringValue
            out[Int(id)] = LayerReadLimits(definition: d, objectIdField: oid)
        }
        return out
    }
}

extension FeatureServiceClient {
    /// The service's root, its `/layers` answer and the schema read from it, checked: a FeatureServer's.
    public func definitions() async throws(EditLogError) -> (root: JSONValue, layers: JSONValue, schema: ServiceSchema) {
        let root = try await json("")
        guard root["layers"]?.arrayValue != nil || root["tables"]?.arrayValue != nil else {
            throw EditLogError(.invalidInput, "the answer is not a FeatureServer root (no \"layers\" or \"tables\"): \(root.serialized().prefix(160))", at: baseURL)
        }
        let layers = try await json("layers")
        guard layers["layers"]?.arrayValue != nil else {
            throw EditLogError(.invalidInput, "the service's /layers answer has no \"layers\"", at: baseURL + "/layers")
        }
        do { return (root, layers, try ArcGISSchemaDecoder.decode(service: [(name: "layers", json: layers)], webmap: nil, rules: nil)) } catch {
            throw EditLogError(.invalidInput, "the service's layer definitions cannot be read: \(error.message)", at: baseURL + "/layers")
        }
    }

    /// Every feature of layer `layer` that `whereClause` selects, however many answers that takes: pages of at
    /// most `maxRecordCount` (`resultOffset` in ObjectID order where the layer pages, else the ObjectIDs first and
    /// then batches of them), following `exceededTransferLimit` until the service says it has said everything.
    /// `page` gets each answer's features as they arrive. A service that claims more but sends nothing is an
    /// error: a read is completed or refused, never cut short.
    public func queryAll(layer: Int, where whereClause: String, outFields: String = "*", returnGeometry: Bool,
                         limits: LayerReadLimits, pageSize: Int? = nil,
                         page: ([JSONValue]) async throws(EditLogError) -> Void) async throws(EditLogError) {
        let size = max(1, min(pageSize ?? limits.maxRecordCount, limits.maxRecordCount))
        let path = "\(layer)/query"
        let common: [(String, String)] = [("outFields", outFields), ("returnGeometry", returnGeometry ? "true" : "false")]
        func features(_ answer: JSONValue, _ what: String) throws(EditLogError) -> [JSONValue] {
            guard let f = answer["features"]?.arrayValue else {
                throw EditLogError(.invalidInput, "the query answer (\(what)) has no \"features\": \(answer.serialized().prefix(160))", at: baseURL + "/" + path)
            }
            return f
        }
        if limits.supportsPagination {
            var offset = 0
            while true {
                let answer = try await json(path, [("where", whereClause)] + common + [
                    ("orderByFields", limits.objectIdField), ("resultOffset", String(offset)), ("resultRecordCount", String(size)),
                ], post: true)
                let got = try features(answer, "offset \(offset)")
                try await page(got)
                offset += got.count
                guard answer["exceededTransferLimit"]?.boolValue == true else { return }
                if got.isEmpty {
                    throw EditLogError(.invalidInput, "the service says more features match (exceededTransferLimit) but sent none at offset \(offset): "
                                       + "the read cannot be completed", at: baseURL + "/" + path)
                }
            }
        }
        let ids = try await json(path, [("where", whereClause), ("returnIdsOnly", "true")], post: true)
        var remaining = (ids["objectIds"]?.arrayValue ?? []).compactMap(\.intValue).sorted()
        while !remaining.isEmpty {
            let batch = Array(remaining.prefix(size))
            let answer = try await json(path, [("objectIds", batch.map(String.init).joined(separator: ","))] + common, post: true)
            let got = try features(answer, "objectIds \(batch.first!)…\(batch.last!)")
            var returned = Set<Int64>()
            for f in got { if let o = f["attributes"]?[limits.objectIdField]?.intValue ?? f["attributes"]?.objectValue?.first(where: { $0.key.lowercased() == limits.objectIdField.lowercased() })?.value.intValue { returned.insert(o) } }
            if got.isEmpty && answer["exceededTransferLimit"]?.boolValue == true {
                throw EditLogError(.invalidInput, "the service sent no feature for a batch of \(batch.count) ObjectIDs and says more match: the read cannot be completed",
                                   at: baseURL + "/" + path)
            }
            try await page(got)
            // ObjectIDs the answer left out because of its limit are asked again; those it does not have (deleted
            // since the ids were read) are not.
            if answer["exceededTransferLimit"]?.boolValue == true {
                let asked = Set(batch)
                remaining = remaining.filter { !(asked.contains($0) && returned.contains($0)) }
                if returned.isEmpty { remaining.removeFirst(batch.count) }
            } else {
                remaining.removeFirst(batch.count)
            }
        }
    }

    /// The service's change-tracking generations per layer (`changeTrackingInfo.layerServerGens` of the root):
    /// the generation it has reached and the first it can answer `extractChanges` from.
    public static func serverGens(root: JSONValue) -> [Int: (min: Int64?, current: Int64)] {
        var out: [Int: (min: Int64?, current: Int64)] = [:]
        for g in root["changeTrackingInfo"]?["layerServerGens"]?.arrayValue ?? [] {
            guard let id = g["id"]?.intValue, let gen = g["serverGen"]?.intValue else { continue }
            out[Int(id)] = (g["minServerGen"]?.intValue, gen)
        }
        return out
    }
}
