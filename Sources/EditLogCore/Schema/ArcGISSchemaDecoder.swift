import Foundation

/// Reads ArcGIS REST JSON as Esri's servers write it: the `FeatureServer/layers` response,
/// a service root (its layers/tables are stubs without fields), single layer or table
/// definitions, MapServer-style relationships without role or key, service-level
/// relationships. Optional keys stay optional; unknown field types are kept.
public enum ArcGISSchemaDecoder {

    /// Merges service documents (each named for error messages) into layers, then applies a web map's pop-ups.
    public static func decode(service documents: [(name: String, json: JSONValue)], webmap: JSONValue?, rules: JSONValue?) throws(EditLogError) -> ServiceSchema {
        var layers: [Int: LayerSchema] = [:]
        var order: [Int] = []
        func put(_ l: LayerSchema, replace: Bool) {
            if layers[l.id] == nil { order.append(l.id) }
            if replace || layers[l.id] == nil || layers[l.id]!.fields.isEmpty {
                var merged = l
                if let old = layers[l.id], merged.relationships.isEmpty { merged.relationships = old.relationships }
                layers[l.id] = merged
            }
        }
        for (name, json) in documents {
            guard case .object(let root) = json else {
                throw EditLogError(.invalidInput, "expected a JSON object, found \(json.typeName)", at: name)
            }
            if let e = root["error"]?.objectValue {
                throw EditLogError(.invalidInput, "the file is an ArcGIS error response: \(e["message"]?.stringValue ?? "no message")", at: name)
            }
            if root["layers"] != nil || root["tables"] != nil {
                for key in ["layers", "tables"] {
                    guard let v = root[key], !v.isNull else { continue }
                    guard let list = v.arrayValue else {
                        throw EditLogError(.invalidInput, "\"\(key)\" must be an array, found \(v.typeName)", at: name)
                    }
                    for (i, item) in list.enumerated() {
                        let path = "\(name): \(key)[\(i)]"
                        let l = try layer(from: item, path: path, isTableHint: key == "tables", fallbackId: nil)
                        put(l, replace: !l.fields.isEmpty)
                    }
                }
                if let rels = root["relationships"]?.arrayValue {
                    try applyServiceRelationships(rels, to: &layers, path: "\(name): relationships")
                }
            } else if root["fields"] != nil || root["geometryType"] != nil || root["objectIdField"] != nil {
                let fallback = (layers.keys.max() ?? -1) + 1
                let l = try layer(from: json, path: name, isTableHint: false, fallbackId: fallback)
                put(l, replace: true)
            } else {
                throw EditLogError(.invalidInput, "not an ArcGIS service, layers or layer definition (no \"layers\", \"tables\" or \"fields\")", at: name)
            }
        }
        var result = order.compactMap { layers[$0] }
        if let webmap {
            try applyWebMap(webmap, to: &result)
        } else {
            // No web map: every layer gets ArcGIS's default pop-up (all editable fields, visible).
            for i in result.indices {
                result[i].popup = PopupInfo(title: nil, fieldInfos: result[i].fields.map {
                    PopupFieldInfo(fieldName: $0.name, label: $0.alias, isEditable: $0.editable, visible: true)
                })
            }
        }
        let parsedRules = try rules.map { r throws(EditLogError) in try RulesDecoder.decode(r, layers: result) } ?? []
        let schema = ServiceSchema(layers: result, rules: parsedRules)
        try validateRules(schema)
        return schema
    }

    static func layer(from json: JSONValue, path: String, isTableHint: Bool, fallbackId: Int?) throws(EditLogError) -> LayerSchema {
        guard case .object(let o) = json else {
            throw EditLogError(.invalidInput, "a layer definition must be an object, found \(json.typeName)", at: path)
        }
        let r = Reader(o, path: path)
        let id: Int
        if let v = try r.int("id") { id = v } else if let f = fallbackId { id = f } else {
            throw EditLogError(.invalidInput, "layer has no \"id\"", at: path)
        }
        let name = try r.string("name") ?? "layer \(id)"
        let type = try r.string("type")
        let geometryType = try r.string("geometryType")
        var fields: [FieldSchema] = []
        if let fv = o["fields"], !fv.isNull {
            guard let list = fv.arrayValue else {
                throw EditLogError(.invalidInput, "\"fields\" must be an array, found \(fv.typeName)", at: path)
            }
            for (i, f) in list.enumerated() { fields.append(try field(from: f, path: "\(path).fields[\(i)]")) }
        }
        var seen = Set<String>()
        for f in fields where !seen.insert(f.name.lowercased()).inserted {
            throw EditLogError(.invalidInput, "field \"\(f.name)\" is defined twice", at: path)
        }
        var rels: [RelationshipSchema] = []
        if let rv = o["relationships"], !rv.isNull {
            guard let list = rv.arrayValue else {
                throw EditLogError(.invalidInput, "\"relationships\" must be an array, found \(rv.typeName)", at: path)
            }
            for (i, item) in list.enumerated() {
                guard case .object(let ro) = item else {
                    throw EditLogError(.invalidInput, "a relationship must be an object", at: "\(path).relationships[\(i)]")
                }
                let rr = Reader(ro, path: "\(path).relationships[\(i)]")
                guard let rid = try rr.int("id") else { throw EditLogError(.invalidInput, "relationship has no \"id\"", at: rr.path) }
                guard let related = try rr.int("relatedTableId") else {
                    throw EditLogError(.invalidInput, "relationship has no \"relatedTableId\"", at: rr.path)
                }
                rels.append(RelationshipSchema(
                    id: rid, name: try rr.string("name") ?? "",
                    relatedTableId: related,
                    cardinality: RelationshipCardinality(rawValue: try rr.string("cardinality") ?? "") ?? .unknown,
                    role: RelationshipRole(rawValue: try rr.string("role") ?? "") ?? .unknown,
                    keyField: try rr.string("keyField"),
                    composite: try rr.bool("composite") ?? false))
            }
        }
        var editFields: EditFieldsInfo?
        if case .object(let e)? = o["editFieldsInfo"] {
            let er = Reader(e, path: "\(path).editFieldsInfo")
            editFields = EditFieldsInfo(creationDateField: try er.string("creationDateField"), creatorField: try er.string("creatorField"),
                                        editDateField: try er.string("editDateField"), editorField: try er.string("editorField"))
        }
        let oidField = try r.string("objectIdField") ?? fields.first { $0.type == .oid }?.name
        let gidField = try r.string("globalIdField") ?? fields.first { $0.type == .globalID }?.name
        return LayerSchema(
            id: id, name: name,
            isTable: type == "Table" || (type == nil && isTableHint) || (geometryType == nil && type != "Feature Layer" && isTableHint),
            geometryType: geometryType, objectIdField: oidField, globalIdField: gidField,
            displayField: try r.string("displayField"),
            hasAttachments: try r.bool("hasAttachments") ?? false,
            capabilities: Capabilities(try r.string("capabilities") ?? ""),
            editFieldsInfo: editFields, fields: fields, relationships: rels, popup: nil)
    }

    static func field(from json: JSONValue, path: String) throws(EditLogError) -> FieldSchema {
        guard case .object(let o) = json else {
            throw EditLogError(.invalidInput, "a field must be an object, found \(json.typeName)", at: path)
        }
        let r = Reader(o, path: path)
        guard let name = try r.string("name"), !name.isEmpty else { throw EditLogError(.invalidInput, "field has no \"name\"", at: path) }
        guard let typeName = try r.string("type") else { throw EditLogError(.invalidInput, "field \"\(name)\" has no \"type\"", at: path) }
        let type = FieldType(esriName: typeName)
        var domain: Domain?
        if case .object(let d)? = o["domain"] {
            let dr = Reader(d, path: "\(path).domain")
            let dname = try dr.string("name") ?? ""
            switch try dr.string("type") {
            case "codedValue":
                guard let list = d["codedValues"]?.arrayValue else {
                    throw EditLogError(.invalidInput, "codedValue domain has no \"codedValues\" array", at: dr.path)
                }
                var values: [CodedValue] = []
                for (i, cv) in list.enumerated() {
                    guard case .object(let c) = cv, let code = c["code"] else {
                        throw EditLogError(.invalidInput, "coded value needs a \"code\"", at: "\(dr.path).codedValues[\(i)]")
                    }
                    values.append(CodedValue(name: c["name"]?.stringValue ?? code.serialized(), code: code))
                }
                domain = .codedValue(name: dname, values: values)
            case "range":
                guard let rg = d["range"]?.arrayValue, rg.count == 2, let lo = rg[0].doubleValue, let hi = rg[1].doubleValue else {
                    throw EditLogError(.invalidInput, "range domain needs \"range\": [min, max]", at: dr.path)
                }
                guard lo <= hi else { throw EditLogError(.invalidInput, "range domain has min \(lo) > max \(hi)", at: dr.path) }
                domain = .range(name: dname, min: lo, max: hi)
            case "inherited":
                domain = .inherited
            case let other:
                throw EditLogError(.invalidInput, "unknown domain type \(other.map { "\"\($0)\"" } ?? "(none)")", at: dr.path)
            }
        }
        let defaultValue = o["defaultValue"].flatMap { $0.isNull ? nil : $0 }
        let lockedType = type == .oid || type == .globalID
        return FieldSchema(
            name: name, type: type, alias: try r.string("alias"),
            nullable: try r.bool("nullable") ?? true,
            editable: lockedType ? false : (try r.bool("editable") ?? true),
            length: try r.int("length"), defaultValue: defaultValue, domain: domain)
    }

    /// Service-level relationships (the service root's `relationships`), mapped onto both layers.
    static func applyServiceRelationships(_ rels: [JSONValue], to layers: inout [Int: LayerSchema], path: String) throws(EditLogError) {
        for (i, item) in rels.enumerated() {
            guard case .object(let o) = item else { continue }
            let r = Reader(o, path: "\(path)[\(i)]")
            guard let id = try r.int("id"), let origin = try r.int("originLayerId"), let dest = try r.int("destinationLayerId") else { continue }
            let card = RelationshipCardinality(rawValue: try r.string("cardinality") ?? "") ?? .unknown
            let composite = try r.bool("composite") ?? false
            let name = try r.string("name") ?? ""
            if var l = layers[origin], !l.relationships.contains(where: { $0.id == id }) {
                l.relationships.append(RelationshipSchema(id: id, name: name, relatedTableId: dest, cardinality: card, role: .origin,
                                                          keyField: try r.string("originPrimaryKey"), composite: composite))
                layers[origin] = l
            }
            if var l = layers[dest], !l.relationships.contains(where: { $0.id == id }) {
                l.relationships.append(RelationshipSchema(id: id, name: name, relatedTableId: origin, cardinality: card, role: .destination,
                                                          keyField: try r.string("originForeignKey"), composite: composite))
                layers[dest] = l
            }
        }
    }

    static func applyWebMap(_ webmap: JSONValue, to layers: inout [LayerSchema]) throws(EditLogError) {
        guard case .object(let root) = webmap else {
            throw EditLogError(.invalidInput, "a web map must be a JSON object, found \(webmap.typeName)", at: "webmap")
        }
        var entries: [(path: String, JSONValue)] = []
        func collect(_ v: JSONValue?, _ path: String) {
            guard let list = v?.arrayValue else { return }
            for (i, item) in list.enumerated() {
                entries.append(("\(path)[\(i)]", item))
                collect(item["layers"], "\(path)[\(i)].layers")
            }
        }
        collect(root["operationalLayers"], "webmap: operationalLayers")
        collect(root["tables"], "webmap: tables")
        if entries.isEmpty, root["operationalLayers"] == nil {
            throw EditLogError(.invalidInput, "not a web map (no \"operationalLayers\")", at: "webmap")
        }
        for (path, item) in entries {
            guard case .object(let o) = item else { continue }
            var layerId: Int?
            if let url = o["url"]?.stringValue, let last = url.split(separator: "/").last, let id = Int(last) { layerId = id }
            if layerId == nil, let id = o["layerId"]?.intValue { layerId = Int(id) }
            guard let id = layerId, let idx = layers.firstIndex(where: { $0.id == id }) else { continue }
            guard case .object(let p)? = o["popupInfo"] else { continue }
            if o["disablePopup"]?.boolValue == true { continue }
            var infos: [PopupFieldInfo] = []
            if let list = p["fieldInfos"]?.arrayValue {
                for (i, fi) in list.enumerated() {
                    guard case .object(let f) = fi else { continue }
                    let fr = Reader(f, path: "\(path).popupInfo.fieldInfos[\(i)]")
                    guard let fname = try fr.string("fieldName") else { continue }
                    infos.append(PopupFieldInfo(fieldName: fname, label: try fr.string("label"),
                                                isEditable: try fr.bool("isEditable") ?? false, visible: try fr.bool("visible") ?? true))
                }
            }
            layers[idx].popup = PopupInfo(title: p["title"]?.stringValue, fieldInfos: infos)
        }
    }

    static func validateRules(_ schema: ServiceSchema) throws(EditLogError) {
        for rule in schema.rules {
            for (layerId, field) in rule.fieldsWritten {
                guard let l = schema.layer(id: layerId), l.field(field) != nil else {
                    throw EditLogError(.invalidInput, "rule \"\(rule.name)\" writes unknown field \"\(field)\"", at: "rules")
                }
            }
        }
    }
}

/// Typed access to an object's keys with errors that name the path.
struct Reader {
    let o: [String: JSONValue]
    let path: String
    init(_ o: [String: JSONValue], path: String) { self.o = o; self.path = path }

    func string(_ k: String) throws(EditLogError) -> String? {
        guard let v = o[k], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw EditLogError(.invalidInput, "\"\(k)\" must be a string, found \(v.typeName)", at: path) }
        return s
    }
    func int(_ k: String) throws(EditLogError) -> Int? {
        guard let v = o[k], !v.isNull else { return nil }
        guard let i = v.intValue, let n = Int(exactly: i) else { throw EditLogError(.invalidInput, "\"\(k)\" must be an integer, found \(v)", at: path) }
        return n
    }
    func bool(_ k: String) throws(EditLogError) -> Bool? {
        guard let v = o[k], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw EditLogError(.invalidInput, "\"\(k)\" must be true or false, found \(v.typeName)", at: path) }
        return b
    }
}
