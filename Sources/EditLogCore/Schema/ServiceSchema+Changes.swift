/// What changed between two schemas of a log: the one fact every schema reader calls (`editlog schema diff`, sync's
/// check of the service, `schema apply`, a bundle's import). Only what the service defines is compared: layers and
/// tables, their fields (type, alias, length, nullable, editable, domain), relationships and editor tracking. Pop-ups
/// and rules belong to the log and are never changed by a service.
public struct SchemaChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case layerAdded = "layer-added", layerRemoved = "layer-removed", layerRenamed = "layer-renamed"
        case fieldAdded = "field-added", fieldRemoved = "field-removed", fieldAltered = "field-altered"
        case relationshipAdded = "relationship-added", relationshipRemoved = "relationship-removed"
        case editorTrackingChanged = "editor-tracking-changed"
    }

    public var kind: Kind
    public var layer: Int
    public var layerName: String
    public var field: String?
    /// What an alteration changed, each in words ("length 50 → 100", "domain adds Stump").
    public var details: [String]
    /// A field's type changed: values could not be kept as they are, so no log takes it.
    public var typeChanged: Bool
    /// A string field's length became shorter (values longer than it would be lost: the caller checks the data).
    public var narrowedLength: Int?
    /// Codes a coded-value domain no longer has (values holding them are outside the new domain).
    public var removedCodes: [JSONValue]

    init(_ kind: Kind, _ layer: LayerSchema, field: String? = nil, details: [String] = [], typeChanged: Bool = false,
         narrowedLength: Int? = nil, removedCodes: [JSONValue] = []) {
        self.kind = kind; self.layer = layer.id; self.layerName = layer.name; self.field = field; self.details = details
        self.typeChanged = typeChanged; self.narrowedLength = narrowedLength; self.removedCodes = removedCodes
    }

    /// A change as `json` writes it (a `SchemaChanged` event's `changes`); nil when it is not one. What `json` leaves out
    /// (a type change, a narrowed length, removed codes: the checks before recording) is not restored.
    public init?(json: JSONValue) {
        guard let kind = json["kind"]?.stringValue.flatMap(Kind.init(rawValue:)), let layer = json["layer"]?.intValue,
              let name = json["layerName"]?.stringValue else { return nil }
        self.kind = kind; self.layer = Int(layer); layerName = name; field = json["field"]?.stringValue
        details = (json["details"]?.arrayValue ?? []).compactMap(\.stringValue)
        typeChanged = false; narrowedLength = nil; removedCodes = []
    }

    /// One line: "field-added Trees.Notes (esriFieldTypeString)".
    public var text: String {
        let what = field.map { "\(layerName).\($0)" } ?? "\(layerName) (\(layer))"
        return details.isEmpty ? "\(kind.rawValue) \(what)" : "\(kind.rawValue) \(what): \(details.joined(separator: "; "))"
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["kind": .string(kind.rawValue), "layer": .int(Int64(layer)), "layerName": .string(layerName),
                                      "details": .array(details.map { .string($0) })]
        if let field { o["field"] = .string(field) }
        return .object(o)
    }
}

extension SchemaChange {
    /// What a `SchemaChanged` event changed, each change's `text` ("field-added Trees.Notes: esriFieldTypeString(200)"),
    /// read from its `changes` (`log` prints it in place of the payload, whose definitions are whole); nil for another event.
    public static func summary(of e: RecordedEvent) -> String? {
        guard case .schemaChanged(let c)? = try? e.body else { return nil }
        let changes = c.changes
        return changes.isEmpty ? "no change" : changes.map(\.text).joined(separator: "; ")
    }
}

extension ServiceSchema {
    /// The changes that turn this schema into `new`, layer by layer in id order, fields in the new definition's order.
    public func changes(to new: ServiceSchema) -> [SchemaChange] {
        var out: [SchemaChange] = []
        for l in layers where new.layer(id: l.id) == nil { out.append(SchemaChange(.layerRemoved, l)) }
        for n in new.layers {
            guard let o = layer(id: n.id) else {
                out.append(SchemaChange(.layerAdded, n, details: ["\(n.isTable ? "table" : "layer") with \(n.fields.count) fields"]))
                continue
            }
            if o.name != n.name { out.append(SchemaChange(.layerRenamed, n, details: ["\(o.name) → \(n.name)"])) }
            for f in o.fields where n.field(f.name) == nil { out.append(SchemaChange(.fieldRemoved, n, field: f.name)) }
            for f in n.fields {
                guard let of = o.field(f.name) else {
                    out.append(SchemaChange(.fieldAdded, n, field: f.name, details: [f.type.esriName + (f.length.map { "(\($0))" } ?? "")]))
                    continue
                }
                if let c = Self.alteration(of: of, to: f, in: n) { out.append(c) }
            }
            let oldRels = Set(o.relationships.map(\.id)), newRels = Set(n.relationships.map(\.id))
            for r in n.relationships where !oldRels.contains(r.id) {
                out.append(SchemaChange(.relationshipAdded, n, details: ["\(r.name) (\(r.id)) to layer \(r.relatedTableId)"]))
            }
            for r in o.relationships where !newRels.contains(r.id) {
                out.append(SchemaChange(.relationshipRemoved, n, details: ["\(r.name) (\(r.id)) to layer \(r.relatedTableId)"]))
            }
            if o.editFieldsInfo != n.editFieldsInfo {
                let describe = { (e: EditFieldsInfo?) in e.map { $0.all.joined(separator: ", ") } ?? "none" }
                out.append(SchemaChange(.editorTrackingChanged, n, details: ["\(describe(o.editFieldsInfo)) → \(describe(n.editFieldsInfo))"]))
            }
        }
        return out
    }

    /// How a field's definition changed, or nil when it did not.
    static func alteration(of o: FieldSchema, to n: FieldSchema, in layer: LayerSchema) -> SchemaChange? {
        var details: [String] = []
        var narrowed: Int?
        var removed: [JSONValue] = []
        let typeChanged = o.type != n.type
        if typeChanged { details.append("type \(o.type.esriName) → \(n.type.esriName)") }
        if (o.alias ?? o.name) != (n.alias ?? n.name) { details.append("alias \(o.alias ?? o.name) → \(n.alias ?? n.name)") }
        if o.length != n.length {
            details.append("length \(o.length.map(String.init) ?? "none") → \(n.length.map(String.init) ?? "none")")
            if let nl = n.length, o.length.map({ nl < $0 }) ?? true { narrowed = nl }
        }
        if o.nullable != n.nullable { details.append(n.nullable ? "nullable" : "not nullable") }
        if o.editable != n.editable { details.append(n.editable ? "editable" : "not editable") }
        if o.domain != n.domain {
            switch (o.domain, n.domain) {
            case (.codedValue(_, let ov)?, .codedValue(_, let nv)?):
                let oc = ov.map(\.code), nc = nv.map(\.code)
                let added = nv.filter { !oc.contains($0.code) }, gone = ov.filter { !nc.contains($0.code) }
                if !added.isEmpty { details.append("domain adds " + added.map { "\($0.code.inWords) (\($0.name))" }.joined(separator: ", ")) }
                if !gone.isEmpty { details.append("domain drops " + gone.map { "\($0.code.inWords) (\($0.name))" }.joined(separator: ", ")) }
                if added.isEmpty && gone.isEmpty { details.append("domain's names changed") }
                removed = gone.map(\.code)
            default:
                details.append("domain \(Self.describe(o.domain)) → \(Self.describe(n.domain))")
                if case .codedValue(_, let ov)? = o.domain { removed = ov.map(\.code) }
            }
        }
        if details.isEmpty { return nil }
        return SchemaChange(.fieldAltered, layer, field: n.name, details: details, typeChanged: typeChanged, narrowedLength: narrowed, removedCodes: removed)
    }
}

extension JSONValue {
    /// A value in words: a string as it is, anything else as JSON.
    var inWords: String { stringValue ?? serialized() }
}

/// The log's web map after a schema change: a field the change added joins its layer's pop-up, editable as its definition
/// says, and a layer or table it added gets a pop-up of its fields (ArcGIS's default pop-up). The web map is the log's
/// own (the service never changes it), so without this a new field could take no value from a crew's form. A removed
/// field's pop-up entry stays: it names nothing the schema has, and the web map stays as the administrator wrote it.
public enum WebMapEdits {
    public static func adding(_ changes: [SchemaChange], of schema: ServiceSchema, to webmap: JSONValue?) -> JSONValue? {
        guard case .object(var root)? = webmap else { return webmap }
        func entryId(_ o: [String: JSONValue]) -> Int? {
            if let url = o["url"]?.stringValue, let last = url.split(separator: "/").last, let id = Int(last) { return id }
            return o["layerId"]?.intValue.map { Int($0) }
        }
        func info(_ f: FieldSchema) -> JSONValue {
            .object(["fieldName": .string(f.name), "label": .string(f.alias ?? f.name), "isEditable": .bool(f.editable), "visible": .bool(true)])
        }
        for c in changes {
            guard let layer = schema.layer(id: c.layer) else { continue }
            switch c.kind {
            case .fieldAdded:
                guard let name = c.field, let f = layer.field(name) else { continue }
                for key in ["operationalLayers", "tables"] {
                    guard var list = root[key]?.arrayValue else { continue }
                    for i in list.indices {
                        guard case .object(var o) = list[i], entryId(o) == layer.id, case .object(var p)? = o["popupInfo"] else { continue }
                        p["fieldInfos"] = .array((p["fieldInfos"]?.arrayValue ?? []) + [info(f)])
                        o["popupInfo"] = .object(p)
                        list[i] = .object(o)
                    }
                    root[key] = .array(list)
                }
            case .layerAdded:
                let key = layer.isTable ? "tables" : "operationalLayers"
                let entry: JSONValue = .object(["layerId": .int(Int64(layer.id)), "title": .string(layer.name),
                                                "popupInfo": .object(["title": .string(layer.name), "fieldInfos": .array(layer.fields.map(info))])])
                root[key] = .array((root[key]?.arrayValue ?? []) + [entry])
            default:
                continue
            }
        }
        return .object(root)
    }
}
