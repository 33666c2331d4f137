/// Whether events recorded against another schema can be imported into a log of this one.
extension ServiceSchema {
    /// nil when every layer and field of `other` exists here with the same type (this schema may have added
    /// layers and fields); otherwise what differs, naming the layer and field. `here` and `there` name the two sides
    /// in the message (this schema's, `other`'s), so it says which side lacks what.
    public func incompatibility(importing other: ServiceSchema, here: String = "this log", there: String = "the other log") -> String? {
        var problems: [String] = []
        for l in other.layers {
            guard let mine = layer(id: l.id) else { problems.append("layer \(l.id) (\(l.name)) is in \(there)'s schema but not in \(here)'s"); continue }
            if mine.name != l.name { problems.append("layer \(l.id) is \(l.name) in \(there) and \(mine.name) in \(here)") }
            for f in l.fields {
                guard let hf = mine.field(f.name) else { problems.append("field \(l.name).\(f.name) is in \(there)'s schema but not in \(here)'s"); continue }
                if hf.type != f.type { problems.append("field \(l.name).\(f.name) is \(f.type.esriName) in \(there) and \(hf.type.esriName) in \(here)") }
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }
}
