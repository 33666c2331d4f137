/// The schema of a log: the service's layers and tables, their pop-ups and the dataset rules.
public struct ServiceSchema: Sendable, Hashable {
    public let layers: [LayerSchema]
    public var rules: [Rule]

    private var byId: [Int: Int] = [:]
    private var byName: [String: Int] = [:]

    public init(layers: [LayerSchema], rules: [Rule] = []) {
        self.layers = layers.sorted { $0.id < $1.id }
        self.rules = rules
        for (i, l) in self.layers.enumerated() {
            if byId[l.id] == nil { byId[l.id] = i }
            if byName[l.name.lowercased()] == nil { byName[l.name.lowercased()] = i }
        }
    }

    public func layer(id: Int) -> LayerSchema? { byId[id].map { layers[$0] } }

    /// A layer by name or id, or `.invalidInput` listing the layers there are (the one error for an unknown layer).
    public func requireLayer(_ ref: String) throws(EditLogError) -> LayerSchema {
        guard let l = layer(ref) else {
            throw EditLogError(.invalidInput, "unknown layer \"\(ref)\"; the service has \(layers.map(\.name).joined(separator: ", "))")
        }
        return l
    }

    /// A layer by name (case-insensitive) or by numeric id.
    public func layer(_ ref: String) -> LayerSchema? {
        if let i = byName[ref.lowercased()] { return layers[i] }
        if let id = Int(ref) { return layer(id: id) }
        return nil
    }

    /// The other side of a relationship as the related layer lists it.
    /// The key value a child stores to point at `parent`: the origin's key field, or its GlobalID.
    public static func keyValue(of parent: FeatureSnapshot, originSide: RelationshipSchema, origin: LayerSchema) -> JSONValue {
        if let k = originSide.keyField, k.lowercased() != origin.globalIdField?.lowercased(), let f = origin.field(k) {
            return parent.attributes[f.name] ?? .null
        }
        return .string(parent.globalId)
    }

    public func counterpart(of rel: RelationshipSchema, in layer: LayerSchema) -> (layer: LayerSchema, side: RelationshipSchema)? {
        guard let other = self.layer(id: rel.relatedTableId) else { return nil }
        if let side = other.relationships.first(where: { $0.id == rel.id && $0.relatedTableId == layer.id }) {
            return (other, side)
        }
        return nil
    }
}
