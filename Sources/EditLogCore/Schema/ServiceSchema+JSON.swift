/// A schema as `editlog schema --json` prints it: what the service defines of each layer (not its pop-ups or rules).
extension ServiceSchema {
    public var json: JSONValue {
        .array(layers.map { l in
            .object(["id": .int(Int64(l.id)), "name": .string(l.name), "isTable": .bool(l.isTable),
                     "fields": .array(l.fields.map(\.json)),
                     "relationships": .array(l.relationships.map { r in
                         .object(["id": .int(Int64(r.id)), "name": .string(r.name), "relatedTableId": .int(Int64(r.relatedTableId)),
                                  "role": .string(r.role.rawValue), "keyField": r.keyField.map { .string($0) } ?? .null])
                     }),
                     "editFieldsInfo": l.editFieldsInfo.map { e in .array(e.all.map { .string($0) }) } ?? .null])
        })
    }

    /// A domain in words: its name and codes, or its range.
    public static func describe(_ d: Domain?) -> String {
        switch d {
        case nil: return "none"
        case .codedValue(let name, let v)?: return "\(name): " + v.map { $0.code.inWords }.joined(separator: ", ")
        case .range(let name, let lo, let hi)?: return "\(name) [\(lo), \(hi)]"
        case .inherited?: return "inherited"
        }
    }
}

extension FieldSchema {
    public var json: JSONValue {
        var o: [String: JSONValue] = ["name": .string(name), "type": .string(type.esriName), "alias": alias.map { .string($0) } ?? .null,
                                      "nullable": .bool(nullable), "editable": .bool(editable), "length": length.map { .int(Int64($0)) } ?? .null]
        switch domain {
        case .codedValue(let n, let v)?:
            o["domain"] = .object(["type": .string("codedValue"), "name": .string(n),
                                   "codedValues": .array(v.map { .object(["name": .string($0.name), "code": $0.code]) })])
        case .range(let n, let lo, let hi)?:
            o["domain"] = .object(["type": .string("range"), "name": .string(n), "range": .array([.double(lo), .double(hi)])])
        case .inherited?: o["domain"] = .object(["type": .string("inherited")])
        case nil: o["domain"] = .null
        }
        return .object(o)
    }
}
