import EditLog
import Foundation

/// The area of a replica (`geometry`, `geometryType`, `inSR` of createReplica): an envelope or a polygon, given in
/// WGS 84 (4326, the log's) or Web Mercator (3857, 102100, 102113, 900913), kept in WGS 84. A feature is in the area
/// when its point is, or for a line or a polygon when one of its vertices is or the area's first corner lies in its
/// bounding box (a line or polygon that crosses the area with no vertex inside it).
struct ReplicaArea: Sendable {
    /// Rings of (x, y) in WGS 84; an envelope is one ring of four corners.
    let rings: [[(Double, Double)]]
    /// The same as an Esri JSON polygon (what `ReplicaCreated` records and `Geometry` reads).
    let json: JSONValue

    init(rings: [[(Double, Double)]]) {
        self.rings = rings
        json = ["rings": .array(rings.map { .array($0.map { [.double($0.0), .double($0.1)] }) }), "spatialReference": ["wkid": 4326]]
    }

    static let mercatorWkids: Set<Int64> = [3857, 102100, 102113, 900913]

    static func parse(geometry text: String, type: String?, inSR: String?) throws(ServiceError) -> (area: ReplicaArea, inSR: Int64) {
        var wkid: Int64 = 4326
        if let inSR, !inSR.isEmpty {
            if let n = Int64(inSR) { wkid = n } else if let o = try? JSONParser.parse(Array(inSR.utf8)), let n = o["wkid"]?.intValue ?? o["latestWkid"]?.intValue { wkid = n } else {
                throw .invalid("inSR must be a wkid or {\"wkid\": N}")
            }
        }
        var parsedSR: Int64?
        var rings: [[(Double, Double)]] = []
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.hasPrefix("{") {
            let n = trimmed.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard n.count == 4 else { throw .invalid("geometry: expected xmin,ymin,xmax,ymax or an Esri JSON envelope or polygon") }
            rings = [envelope(n[0], n[1], n[2], n[3])]
        } else {
            guard let g = try? JSONParser.parse(Array(trimmed.utf8)) else { throw .invalid("geometry is not JSON") }
            parsedSR = g["spatialReference"]?["wkid"]?.intValue
            if let xmin = g["xmin"]?.doubleValue, let ymin = g["ymin"]?.doubleValue, let xmax = g["xmax"]?.doubleValue, let ymax = g["ymax"]?.doubleValue {
                guard type == nil || type == "esriGeometryEnvelope" else { throw .invalid("geometry is an envelope but geometryType is \(type!)") }
                rings = [envelope(xmin, ymin, xmax, ymax)]
            } else if let rs = g["rings"]?.arrayValue {
                guard type == nil || type == "esriGeometryPolygon" else { throw .invalid("geometry is a polygon but geometryType is \(type!)") }
                for r in rs {
                    let ring = r.arrayValue?.compactMap { p -> (Double, Double)? in
                        guard let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue else { return nil }
                        return (x, y)
                    } ?? []
                    guard ring.count >= 3 else { throw .invalid("geometry: a polygon ring needs at least 3 points") }
                    rings.append(ring)
                }
                guard !rings.isEmpty else { throw .invalid("geometry: a polygon needs a ring") }
            } else {
                throw .invalid("geometry: expected an envelope (xmin, ymin, xmax, ymax) or a polygon (rings)")
            }
        }
        if let type, type != "esriGeometryEnvelope" && type != "esriGeometryPolygon" {
            throw .invalid("geometryType must be esriGeometryEnvelope or esriGeometryPolygon, not \(type)")
        }
        let sr = parsedSR ?? wkid
        if mercatorWkids.contains(sr) {
            rings = rings.map { $0.map(toWGS84) }
        } else if sr != 4326 {
            throw .invalid("inSR \(sr) is not supported: give the area in 4326 (the service's) or 3857")
        }
        return (ReplicaArea(rings: rings), sr)
    }

    static func envelope(_ xmin: Double, _ ymin: Double, _ xmax: Double, _ ymax: Double) -> [(Double, Double)] {
        [(xmin, ymin), (xmax, ymin), (xmax, ymax), (xmin, ymax)]
    }

    /// Web Mercator metres to degrees.
    static func toWGS84(_ p: (Double, Double)) -> (Double, Double) {
        let r = 6_378_137.0
        return (p.0 / r * 180 / .pi, (2 * atan(exp(p.1 / r)) - .pi / 2) * 180 / .pi)
    }

    /// Even-odd rule over every ring (Core's `Geometry.polygon(_:contains:)`).
    func contains(_ x: Double, _ y: Double) -> Bool { Geometry.polygon(json, contains: x, y) }

    /// Whether a feature's Esri JSON geometry is in the area (see the type). A feature without geometry is not.
    func contains(geometry g: JSONValue?) -> Bool {
        guard let g, !g.isNull else { return false }
        if let p = Geometry.point(g) { return contains(p.x, p.y) }
        let parts = (g["rings"]?.arrayValue ?? []) + (g["paths"]?.arrayValue ?? []) + (g["points"].map { [$0] } ?? [])
        for part in parts {
            for p in part.arrayValue ?? [] {
                if let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue, contains(x, y) { return true }
            }
        }
        guard let b = Geometry.bounds(g), let corner = rings.first?.first else { return false }
        return corner.0 >= b.minX && corner.0 <= b.maxX && corner.1 >= b.minY && corner.1 <= b.maxY
    }
}
