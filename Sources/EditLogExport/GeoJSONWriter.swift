import EditLogCore
import GRDB

/// A GeoJSON FeatureCollection of one layer's live features: coordinates exactly as stored (no
/// reprojection); when the layer's spatial reference is not WGS 84 (4326) a `crs` member names it
/// (`urn:ogc:def:crs:EPSG::<code>`, the 2008 GeoJSON form), since RFC 7946 readers assume WGS 84.
/// Properties are the ObjectID, the GlobalID and the attribute fields, valued as `query` gives them
/// (dates as epoch milliseconds); tables have `"geometry": null`. Geometry as `Geometry.geoJSON` converts it.
public enum GeoJSONWriter {
    public static func collection(_ state: Database, layer l: ExportLayer, tick: (() -> Void)? = nil) throws -> JSONValue {
        var features: [JSONValue] = []
        let rows = try l.liveRows(state)
        while let row = try rows.next() {
            let oid: Int64 = row["_oid"]
            var props: [String: JSONValue] = [l.objectIdName: .int(oid), l.globalIdName: .string(row["_globalid"])]
            for f in l.schema.attributeFields { props[f.name] = l.value(row, f) }
            features.append(.object([
                "type": .string("Feature"), "id": .int(oid), "properties": .object(props),
                "geometry": (l.hasGeometry ? Geometry.geoJSON(try l.esriGeometry(row)) : nil) ?? .null,
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
