/// Esri JSON geometry as GeoJSON, the one conversion every GeoJSON output calls (`export` and `replay` to
/// .geojson, `diff --format geojson`, the feature service's `f=geojson`, the CSV's WKT).
extension Geometry {
    /// Point, multipoint, polyline and polygon, coordinates as stored (x and y only, no reprojection); nil for
    /// anything else (no geometry, an envelope, a point without x or y).
    ///
    /// A polyline is always a MultiLineString, even of one path: an Esri polyline is multi-part by definition,
    /// and one geometry type per layer is what GDAL's GeoJSON reader needs to give a layer one type. A polygon
    /// is one Polygon with all its rings, as its WKB is.
    public static func geoJSON(_ g: JSONValue?) -> JSONValue? {
        guard let g else { return nil }
        func position(_ p: JSONValue) -> JSONValue? {
            guard let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue else { return nil }
            return .array([.double(x), .double(y)])
        }
        func positions(_ v: JSONValue?) -> JSONValue { .array((v?.arrayValue ?? []).compactMap(position)) }
        if let p = point(g) {
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
}
