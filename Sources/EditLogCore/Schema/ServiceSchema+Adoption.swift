/// What a log adopts of another log's schema when it imports that log's events (a bundle): the union of the two.
///
/// - A layer or table, a field or a relationship the other schema has and this log's never had (the other log added
///   it) is adopted: the import records it first, as a `SchemaChanged` of this log (`Cause.schemaImport`).
/// - A field the other schema has that this log removed (an earlier schema of this log had it) is not adopted: a
///   removal is the removing log's decision. The other log's values for it stay in the imported events (history) and
///   are not projected here (`removedHere` names those fields; the import counts the values).
/// - A field this log has that the other lacks stays (a removal there is not imported): the other's values apply.
/// - A relationship the other schema adds is adopted.
/// - What cannot be joined is a problem, refused by name with nothing written: a field whose type differs, a layer
///   named otherwise, a layer this log removed.
/// Alterations of a field that both have (alias, length, domain) and editor tracking stay this log's.
public struct SchemaAdoption: Sendable {
    /// Changes from this log's schema to adopt (layers, fields and relationships added), in `changes(to:)` order.
    public var adopted: [SchemaChange] = []
    /// Fields (`field-added` changes from this log's schema) that this log removed: not adopted.
    public var removedHere: [SchemaChange] = []
    /// What cannot be imported, each naming the layer and field.
    public var problems: [String] = []
}

extension ServiceSchema {
    /// What this schema (the one in force; `history`, every schema this log had, oldest first) adopts of `other`'s
    /// (see `SchemaAdoption`). `here` and `there` name the two sides in the problems.
    public func adoption(of other: ServiceSchema, history: [ServiceSchema], here: String = "this log", there: String = "the other log") -> SchemaAdoption {
        var out = SchemaAdoption()
        func hadLayer(_ id: Int) -> Bool { history.contains { $0.layer(id: id) != nil } }
        func hadField(_ layer: Int, _ name: String) -> Bool { history.contains { $0.layer(id: layer)?.field(name) != nil } }
        for c in changes(to: other) {
            switch c.kind {
            case .layerAdded:
                if hadLayer(c.layer) {
                    out.problems.append("layer \(c.layer) (\(c.layerName)) is in \(there)'s schema, but \(here) removed it")
                } else {
                    out.adopted.append(c)
                }
            case .layerRenamed:
                let mine = layer(id: c.layer)?.name ?? "?"
                out.problems.append("layer \(c.layer) is \(c.layerName) in \(there) and \(mine) in \(here)")
            case .fieldAdded:
                guard let f = c.field else { continue }
                if hadField(c.layer, f) { out.removedHere.append(c) } else { out.adopted.append(c) }
            case .fieldAltered where c.typeChanged:
                guard let f = c.field, let mine = layer(id: c.layer)?.field(f), let theirs = other.layer(id: c.layer)?.field(f) else { continue }
                out.problems.append("field \(c.layerName).\(f) is \(theirs.type.esriName) in \(there) and \(mine.type.esriName) in \(here)")
            case .relationshipAdded:
                out.adopted.append(c)
            default:
                continue  // this log's own: its fields the other lacks, alterations, editor tracking, relationships it removed
            }
        }
        return out
    }
}

/// Service documents (ArcGIS REST JSON, as `init` takes them and a schema event records them), edited as a whole.
public enum ServiceDocuments {
    /// `ours` with what `adopted` (from `ServiceSchema.adoption`) takes of `theirs` (`theirSchema` decoded from them):
    /// each added field and relationship appended to its layer's definition in `ours` (as `theirs` defines it), each
    /// added layer or table appended to the first document that lists layers (or as a document of its own). Every
    /// other byte of `ours` stays.
    public static func adopting(_ adopted: [SchemaChange], into ours: [(name: String, json: JSONValue)], from theirs: [(name: String, json: JSONValue)],
                                theirSchema: ServiceSchema) -> [(name: String, json: JSONValue)] {
        var docs = ours
        let theirDefinitions = definitions(theirs)
        func theirLayer(_ id: Int) -> [String: JSONValue]? { theirDefinitions[id].flatMap { value(at: $0, in: theirs)?.objectValue } }
        for c in adopted {
            switch c.kind {
            case .layerAdded:
                guard let l = theirSchema.layer(id: c.layer) else { continue }
                var o = theirLayer(c.layer) ?? [:]
                o["id"] = .int(Int64(l.id))
                if o["type"] == nil { o["type"] = .string(l.isTable ? "Table" : "Feature Layer") }
                if o["fields"] == nil { o["fields"] = .array(l.fields.map(\.json)) }
                if o["relationships"] == nil { o["relationships"] = .array(l.relationships.map(json)) }
                let key = l.isTable ? "tables" : "layers"
                if let i = docs.firstIndex(where: { $0.json["layers"] != nil || $0.json["tables"] != nil }), case .object(var root) = docs[i].json {
                    root[key] = .array((root[key]?.arrayValue ?? []) + [.object(o)])
                    docs[i].json = .object(root)
                } else {
                    docs.append((name: "\(l.name).json", json: .object(o)))
                }
            case .fieldAdded, .relationshipAdded:
                guard let at = definitions(docs)[c.layer], case .object(var mine)? = value(at: at, in: docs),
                      let theirsLayer = theirSchema.layer(id: c.layer) else { continue }
                if c.kind == .fieldAdded {
                    guard let name = c.field, let f = theirsLayer.field(name) else { continue }
                    let raw = theirLayer(c.layer)?["fields"]?.arrayValue?.first { $0["name"]?.stringValue?.lowercased() == name.lowercased() }
                    mine["fields"] = .array((mine["fields"]?.arrayValue ?? []) + [raw ?? f.json])
                } else {
                    let held = Set((mine["relationships"]?.arrayValue ?? []).compactMap { $0["id"]?.intValue })
                    for r in theirsLayer.relationships where !held.contains(Int64(r.id)) {
                        let raw = theirLayer(c.layer)?["relationships"]?.arrayValue?.first { $0["id"]?.intValue == Int64(r.id) }
                        mine["relationships"] = .array((mine["relationships"]?.arrayValue ?? []) + [raw ?? json(r)])
                    }
                }
                set(.object(mine), at: at, in: &docs)
            default:
                continue
            }
        }
        return docs
    }

    /// Where a layer's definition is in documents: the document, and its list (`layers`/`tables`) and index there.
    struct Location { var doc: Int; var list: String?; var index: Int }

    /// Each layer's definition with fields in `docs`, the last one as `ArcGISSchemaDecoder` takes it (a stub without
    /// fields only when there is no other).
    static func definitions(_ docs: [(name: String, json: JSONValue)]) -> [Int: Location] {
        var out: [Int: (Location, Bool)] = [:]
        func put(_ id: Int, _ at: Location, _ o: JSONValue) {
            let full = o["fields"]?.arrayValue?.isEmpty == false
            if full || out[id]?.1 != true { out[id] = (at, full) }
        }
        for (d, doc) in docs.enumerated() {
            guard case .object(let root) = doc.json else { continue }
            if root["layers"] != nil || root["tables"] != nil {
                for key in ["layers", "tables"] {
                    for (i, item) in (root[key]?.arrayValue ?? []).enumerated() {
                        guard let id = item["id"]?.intValue else { continue }
                        put(Int(id), Location(doc: d, list: key, index: i), item)
                    }
                }
            } else if root["fields"] != nil || root["geometryType"] != nil || root["objectIdField"] != nil {
                let id = root["id"]?.intValue.map { Int($0) } ?? ((out.keys.max() ?? -1) + 1)
                put(id, Location(doc: d, list: nil, index: 0), doc.json)
            }
        }
        return out.mapValues(\.0)
    }

    static func value(at l: Location, in docs: [(name: String, json: JSONValue)]) -> JSONValue? {
        guard let list = l.list else { return docs[l.doc].json }
        return docs[l.doc].json[list]?.arrayValue?[l.index]
    }

    static func set(_ v: JSONValue, at l: Location, in docs: inout [(name: String, json: JSONValue)]) {
        guard let list = l.list else { docs[l.doc].json = v; return }
        guard case .object(var root) = docs[l.doc].json, var items = root[list]?.arrayValue else { return }
        items[l.index] = v
        root[list] = .array(items)
        docs[l.doc].json = .object(root)
    }

    static func json(_ r: RelationshipSchema) -> JSONValue {
        var o: [String: JSONValue] = ["id": .int(Int64(r.id)), "name": .string(r.name), "relatedTableId": .int(Int64(r.relatedTableId)),
                                      "cardinality": .string(r.cardinality.rawValue), "role": .string(r.role.rawValue), "composite": .bool(r.composite)]
        if let k = r.keyField { o["keyField"] = .string(k) }
        return .object(o)
    }
}
