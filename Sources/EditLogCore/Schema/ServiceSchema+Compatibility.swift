/// Whether events recorded against another schema can be imported into a log of this one.
extension ServiceSchema {
    /// nil when every layer and field of `other` exists here with the same type (this schema may have added
    /// layers and fields); otherwise what differs, naming the layer and field.
    public func incompatibility(importing other: ServiceSchema) -> String? {
        var problems: [String] = []
        for l in other.layers {
            guard let here = layer(id: l.id) else { problems.append("layer \(l.id) (\(l.name)) is not in this log's schema"); continue }
            if here.name != l.name { problems.append("layer \(l.id) is \(l.name) there and \(here.name) here") }
            for f in l.fields {
                guard let hf = here.field(f.name) else { problems.append("field \(l.name).\(f.name) is not in this log's schema"); continue }
                if hf.type != f.type { problems.append("field \(l.name).\(f.name) is \(f.type.esriName) there and \(hf.type.esriName) here") }
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }
}
