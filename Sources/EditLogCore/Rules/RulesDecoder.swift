/// Reads a rules file: `{"rules":[{"type":..., "name":..., ...}]}`.
/// A geocoder table must be inline (`"addresses": [...]`) here; file loaders inline a `"table"` path first,
/// so the rules recorded in the log are complete and replay never reads outside files.
public enum RulesDecoder {
    public static func decode(_ json: JSONValue, layers: [LayerSchema]) throws(EditLogError) -> [Rule] {
        guard case .object(let root) = json else {
            throw EditLogError(.invalidInput, "a rules file must be a JSON object, found \(json.typeName)", at: "rules")
        }
        for k in root.keys.sorted() where k != "rules" && k != "$schema" {
            throw EditLogError(.invalidInput, "unknown key \"\(k)\"; a rules file has \"rules\"", at: "rules")
        }
        guard let list = root["rules"]?.arrayValue else {
            throw EditLogError(.invalidInput, "expected \"rules\": [ ... ]", at: "rules")
        }
        func layer(_ r: Reader, _ key: String) throws(EditLogError) -> LayerSchema {
            guard let ref = try r.string(key) else { throw EditLogError(.invalidInput, "missing \"\(key)\"", at: r.path) }
            guard let l = layers.first(where: { $0.name.caseInsensitiveCompare(ref) == .orderedSame }) ?? Int(ref).flatMap({ id in layers.first { $0.id == id } }) else {
                throw EditLogError(.invalidInput, "\"\(key)\": unknown layer \"\(ref)\"", at: r.path)
            }
            return l
        }
        func field(_ r: Reader, _ key: String, in l: LayerSchema) throws(EditLogError) -> String {
            guard let f = try r.string(key) else { throw EditLogError(.invalidInput, "missing \"\(key)\"", at: r.path) }
            guard let fs = l.field(f) else { throw EditLogError(.invalidInput, "\"\(key)\": layer \(l.name) has no field \"\(f)\"", at: r.path) }
            return fs.name
        }
        var rules: [Rule] = []
        for (i, item) in list.enumerated() {
            let path = "rules[\(i)]"
            guard case .object(let o) = item else { throw EditLogError(.invalidInput, "a rule must be an object", at: path) }
            let r = Reader(o, path: path)
            let name = try r.string("name") ?? "rule\(i)"
            let allowed: [String: Set<String>] = [
                "latestChildRollup": ["relationship", "parentLayer", "childLayer", "orderBy", "fields"],
                "pointInPolygonLookup": ["layer", "field", "polygonLayer", "polygonField"],
                "reverseGeocode": ["layer", "field", "geocoder"],
            ]
            if let type = try r.string("type"), let keys = allowed[type] {
                for k in o.keys.sorted() where !keys.contains(k) && k != "type" && k != "name" {
                    throw EditLogError(.invalidInput, "unknown key \"\(k)\" for a \(type) rule", at: path)
                }
            }
            switch try r.string("type") {
            case "latestChildRollup":
                let parent = try layer(r, "parentLayer"), child = try layer(r, "childLayer")
                guard let relRef = try r.string("relationship"), let rel = parent.relationship(relRef), rel.relatedTableId == child.id else {
                    throw EditLogError(.invalidInput, "\"relationship\" must name a relationship between \(parent.name) and \(child.name)", at: path)
                }
                let orderBy = try field(r, "orderBy", in: child)
                guard case .object(let map)? = o["fields"], !map.isEmpty else {
                    throw EditLogError(.invalidInput, "\"fields\" must map parent fields to child fields", at: path)
                }
                var copies: [Rule.FieldCopy] = []
                for key in map.keys.sorted() {
                    guard let src = map[key]?.stringValue else { throw EditLogError(.invalidInput, "fields.\(key) must be a string", at: path) }
                    guard let t = parent.field(key) else { throw EditLogError(.invalidInput, "\(parent.name) has no field \"\(key)\"", at: path) }
                    guard let s = child.field(src) else { throw EditLogError(.invalidInput, "\(child.name) has no field \"\(src)\"", at: path) }
                    copies.append(.init(target: t.name, source: s.name))
                }
                rules.append(Rule(name: name, kind: .latestChildRollup(relationshipId: rel.id, parentLayer: parent.id, childLayer: child.id, orderBy: orderBy, fields: copies)))
            case "pointInPolygonLookup":
                let l = try layer(r, "layer"), poly = try layer(r, "polygonLayer")
                guard poly.geometryType == "esriGeometryPolygon" else {
                    throw EditLogError(.invalidInput, "polygonLayer \(poly.name) is not a polygon layer", at: path)
                }
                rules.append(Rule(name: name, kind: .pointInPolygonLookup(layer: l.id, field: try field(r, "field", in: l), polygonLayer: poly.id, polygonField: try field(r, "polygonField", in: poly))))
            case "reverseGeocode":
                let l = try layer(r, "layer")
                let f = try field(r, "field", in: l)
                guard case .object(let g)? = o["geocoder"] else { throw EditLogError(.invalidInput, "missing \"geocoder\"", at: path) }
                let gr = Reader(g, path: "\(path).geocoder")
                guard try gr.string("type") == "offlineTable" else {
                    throw EditLogError(.invalidInput, "geocoder type must be \"offlineTable\"", at: gr.path)
                }
                guard let entries = g["addresses"]?.arrayValue else {
                    throw EditLogError(.invalidInput, "geocoder needs \"addresses\" (or a \"table\" file next to the rules file)", at: gr.path)
                }
                var table: [OfflineAddressTable.Entry] = []
                for (k, e) in entries.enumerated() {
                    guard let x = e["x"]?.doubleValue, let y = e["y"]?.doubleValue, let a = e["address"]?.stringValue else {
                        throw EditLogError(.invalidInput, "an address needs numeric x, y and a string address", at: "\(gr.path).addresses[\(k)]")
                    }
                    table.append(.init(x: x, y: y, address: a))
                }
                for k in g.keys.sorted() where !["type", "addresses", "maxDistanceMeters"].contains(k) {
                    throw EditLogError(.invalidInput, "unknown key \"\(k)\" in geocoder", at: gr.path)
                }
                var maxD = 250.0
                if let m = g["maxDistanceMeters"] {
                    guard let d = m.doubleValue, d > 0, d.isFinite else {
                        throw EditLogError(.invalidInput, "\"maxDistanceMeters\" must be a positive number, found \(m)", at: gr.path)
                    }
                    maxD = d
                }
                rules.append(Rule(name: name, kind: .reverseGeocode(layer: l.id, field: f, geocoder: OfflineAddressTable(entries: table, maxDistanceMeters: maxD))))
            case let other:
                throw EditLogError(.invalidInput, "unknown rule type \(other.map { "\"\($0)\"" } ?? "(none)"); expected latestChildRollup, pointInPolygonLookup or reverseGeocode", at: path)
            }
        }
        return rules
    }
}
