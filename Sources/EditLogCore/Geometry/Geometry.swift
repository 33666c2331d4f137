/// Esri JSON geometry, checked against a layer's geometry type, with WKB for the projections
/// and a point-in-polygon test for the lookup rule.
public enum Geometry {
    public static func validate(_ g: JSONValue, geometryType: String, at location: String) throws(EditLogError) {
        guard case .object(let o) = g else {
            throw EditLogError(.validation, "geometry must be an Esri JSON object, found \(g.typeName)", at: location)
        }
        func coords(_ v: JSONValue?, _ what: String) throws(EditLogError) -> [[Double]] {
            guard let list = v?.arrayValue else { throw EditLogError(.validation, "geometry needs \"\(what)\"", at: location) }
            var out: [[Double]] = []
            for p in list {
                guard let a = p.arrayValue, a.count >= 2, a.count <= 4 else {
                    throw EditLogError(.validation, "each vertex of \"\(what)\" must be [x, y] (optionally z, m)", at: location)
                }
                var xy: [Double] = []
                for c in a {
                    guard let d = c.doubleValue, d.isFinite else { throw EditLogError(.validation, "coordinates must be finite numbers", at: location) }
                    xy.append(d)
                }
                out.append(xy)
            }
            return out
        }
        switch geometryType {
        case "esriGeometryPoint":
            guard let x = o["x"]?.doubleValue, let y = o["y"]?.doubleValue, x.isFinite, y.isFinite else {
                throw EditLogError(.validation, "a point needs numeric \"x\" and \"y\"", at: location)
            }
        case "esriGeometryMultipoint":
            _ = try coords(o["points"], "points")
        case "esriGeometryPolyline":
            guard let paths = o["paths"]?.arrayValue, !paths.isEmpty else { throw EditLogError(.validation, "a polyline needs \"paths\"", at: location) }
            for p in paths { if try coords(p, "paths").count < 2 { throw EditLogError(.validation, "each path needs 2 or more vertices", at: location) } }
        case "esriGeometryPolygon":
            guard let rings = o["rings"]?.arrayValue, !rings.isEmpty else { throw EditLogError(.validation, "a polygon needs \"rings\"", at: location) }
            for r in rings { if try coords(r, "rings").count < 4 { throw EditLogError(.validation, "each ring needs 4 or more vertices (closed)", at: location) } }
        case "esriGeometryEnvelope":
            for k in ["xmin", "ymin", "xmax", "ymax"] where o[k]?.doubleValue == nil {
                throw EditLogError(.validation, "an envelope needs \"\(k)\"", at: location)
            }
        default:
            break
        }
    }

    public static func point(_ g: JSONValue?) -> (x: Double, y: Double)? {
        guard let g, let x = g["x"]?.doubleValue, let y = g["y"]?.doubleValue else { return nil }
        return (x, y)
    }

    static func ring(_ v: JSONValue) -> [(Double, Double)] {
        (v.arrayValue ?? []).compactMap { p in
            guard let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue else { return nil }
            return (x, y)
        }
    }

    /// Even-odd rule over all rings (holes work as Esri's counter-clockwise inner rings do).
    public static func polygon(_ g: JSONValue?, contains x: Double, _ y: Double) -> Bool {
        guard let rings = g?["rings"]?.arrayValue else { return false }
        var inside = false
        for r in rings {
            let pts = ring(r)
            guard pts.count >= 3 else { continue }
            var j = pts.count - 1
            for i in 0..<pts.count {
                let (xi, yi) = pts[i], (xj, yj) = pts[j]
                if (yi > y) != (yj > y), x < (xj - xi) * (y - yi) / (yj - yi) + xi { inside.toggle() }
                j = i
            }
        }
        return inside
    }

    public static func bounds(_ g: JSONValue?) -> (minX: Double, minY: Double, maxX: Double, maxY: Double)? {
        guard let g else { return nil }
        var pts: [(Double, Double)] = []
        if let p = point(g) { pts.append(p) }
        for key in ["rings", "paths"] { for r in g[key]?.arrayValue ?? [] { pts += ring(r) } }
        pts += ring(g["points"] ?? .null)
        guard let f = pts.first else { return nil }
        var b = (f.0, f.1, f.0, f.1)
        for (x, y) in pts { b = (min(b.0, x), min(b.1, y), max(b.2, x), max(b.3, y)) }
        return b
    }

    /// OGC WKB (little endian, 2D) of an Esri JSON geometry; nil when there is none.
    public static func wkb(_ g: JSONValue?) -> [UInt8]? {
        guard let g, case .object = g else { return nil }
        var out: [UInt8] = []
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func f64(_ v: Double) { withUnsafeBytes(of: v.bitPattern.littleEndian) { out.append(contentsOf: $0) } }
        func header(_ type: UInt32) { out.append(1); u32(type) }
        if let p = point(g) {
            header(1); f64(p.x); f64(p.y)
        } else if let rings = g["rings"]?.arrayValue {
            header(3); u32(UInt32(rings.count))
            for r in rings { let pts = ring(r); u32(UInt32(pts.count)); for (x, y) in pts { f64(x); f64(y) } }
        } else if let paths = g["paths"]?.arrayValue {
            header(5); u32(UInt32(paths.count))
            for p in paths { let pts = ring(p); header(2); u32(UInt32(pts.count)); for (x, y) in pts { f64(x); f64(y) } }
        } else if let points = g["points"] {
            let pts = ring(points)
            header(4); u32(UInt32(pts.count))
            for (x, y) in pts { header(1); f64(x); f64(y) }
        } else {
            return nil
        }
        return out
    }
}
