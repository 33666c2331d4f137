import EditLogCore
import GRDB

/// A GeoJSON FeatureCollection of one layer's live features: coordinates exactly as stored (no
/// reprojection); when the layer's spatial reference is not WGS 84 (4326) a `crs` member names it
/// (`urn:ogc:def:crs:EPSG::<code>`, the 2008 GeoJSON form), since RFC 7946 readers assume WGS 84.
/// Properties are the ObjectID, the GlobalID and the attribute fields, valued as `query` gives them
/// (dates as epoch milliseconds); tables have `"geometry": null`.
public enum GeoJSONWriter {
    /// Esri JSON geometry as GeoJSON: point, multipoint, polyline (MultiLineString) and polygon (one Polygon
    /// with all rings, as the WKB is); nil for anything else.
    public static func geometry(_ g: JSONValue?) -> JSONValue? {
        guard let g else { return nil }
        func position(_ p: JSONValue) -> JSONValue? {
            guard let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue else { return nil }
            return .array([.double(x), .double(y)])
        }
        func positions(_ v: JSONValue?) -> JSONValue { .array((v?.arrayValue ?? []).compactMap(position)) }
        if let p = Geometry.point(g) {
            return .object(["type": .string("Point"), "coordinates": .array([.double(p.x), .double(p.y)])])
        } else if let rings = g["rings"]?.arrayValue {
            return .object(["type": .string("Polygon"), "coordinates": .array(rings.map { positions($0) })])
        } else if let paths = g["paths"]?.arrayValue {
            return .object(["type": .string("MultiLineString"), "coordinates": .array(paths.map { positions($0) })])
        } else if let points = g["points"] {
            return .object(["type": .string("MultiPoint"), "coordinates": positions(points)])
        }
        return nil
    }

    public static func collection(_ state: Database, layer l: ExportLayer, tick: (() -> Void)? = nil) throws -> JSONValue {
        var features: [JSONValue] = []
        let rows = try l.liveRows(state)
        while let row = try rows.next() {
            let oid: Int64 = row["_oid"]
            var props: [String: JSONValue] = [l.objectIdName: .int(oid), l.globalIdName: .string(row["_globalid"])]
            for f in l.schema.attributeFields { props[f.name] = l.value(row, f) }
            features.append(.object([
                "type": .string("Feature"), "id": .int(oid), "properties": .object(props),
                "geometry": (l.hasGeometry ? geometry(try l.esriGeometry(row)) : nil) ?? .null,
            ]))
            tick?()
        }
        var o: [String: JSONValue] = ["type": .string("FeatureCollection"), "name": .string(l.schema.name), "features": .array(features)]
        if let epsg = l.epsg, epsg != 4326 {
            o["crs"] = .object(["type": .string("name"), "properties": .object(["name": .string("urn:ogc:def:crs:EPSG::\(epsg)")])])
        }
        return .object(o)
    }

    public static func document(_ state: Database, layer: ExportLayer, tick: (() -> Void)? = nil) throws -> [UInt8] {
        try collection(state, layer: layer, tick: tick).serializedBytes() + [0x0A]
    }
}
