import EditLogCore
import GRDB

/// CSV (RFC 4180: comma, CRLF, fields quoted when they hold a comma, quote or line break) of one layer's
/// live features. Header: the ObjectID field, the GlobalID field, the attribute fields in schema order, then
/// `x,y` for point layers or `wkt` for other geometry layers (tables have none). Values as `query` gives
/// them (dates as epoch milliseconds); NULL is an empty field.
public enum CSVWriter {
    public static func field(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func text(_ v: JSONValue) -> String {
        switch v {
        case .null: return ""
        case .string(let s): return s
        default: return v.serialized()
        }
    }

    static func number(_ d: Double) -> String { JSONValue.double(d).serialized() }

    /// WKT of an Esri JSON geometry (the shapes the WKB has); empty when there is none.
    public static func wkt(_ g: JSONValue?) -> String {
        guard let gj = Geometry.geoJSON(g), let type = gj["type"]?.stringValue, let c = gj["coordinates"] else { return "" }
        func pos(_ p: JSONValue) -> String { (p.arrayValue ?? []).compactMap(\.doubleValue).map(number).joined(separator: " ") }
        func list(_ v: JSONValue) -> String { "(" + (v.arrayValue ?? []).map(pos).joined(separator: ", ") + ")" }
        func lists(_ v: JSONValue) -> String { "(" + (v.arrayValue ?? []).map(list).joined(separator: ", ") + ")" }
        switch type {
        case "Point": return "POINT (\(pos(c)))"
        case "MultiPoint": return "MULTIPOINT (" + (c.arrayValue ?? []).map { "(\(pos($0)))" }.joined(separator: ", ") + ")"
        case "MultiLineString": return "MULTILINESTRING " + lists(c)
        case "Polygon": return "POLYGON " + lists(c)
        default: return ""
        }
    }

    public static func document(_ state: Database, layer l: ExportLayer, tick: (() -> Void)? = nil) throws -> [UInt8] {
        let isPoint = l.hasGeometry && l.schema.geometryType == "esriGeometryPoint"
        var header = [l.objectIdName, l.globalIdName] + l.schema.attributeFields.map(\.name)
        if l.hasGeometry { header += isPoint ? ["x", "y"] : ["wkt"] }
        var out = header.map(field).joined(separator: ",") + "\r\n"
        let rows = try l.liveRows(state)
        while let row = try rows.next() {
            let oid: Int64 = row["_oid"], gid: String = row["_globalid"]
            var cells = [String(oid), gid] + l.schema.attributeFields.map { text(l.value(row, $0)) }
            if l.hasGeometry {
                let g = try l.esriGeometry(row)
                if isPoint {
                    let p = Geometry.point(g)
                    cells += [p.map { number($0.x) } ?? "", p.map { number($0.y) } ?? ""]
                } else {
                    cells.append(wkt(g))
                }
            }
            out += cells.map(field).joined(separator: ",") + "\r\n"
            tick?()
        }
        return Array(out.utf8)
    }
}
