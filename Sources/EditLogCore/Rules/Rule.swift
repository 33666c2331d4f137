import Foundation

/// A dataset rule (the seed's Trees of Portland custom behaviours, made declarative).
/// Rules run after a commit and record derived events whose cause names the rule and the triggering session.
public struct Rule: Sendable, Hashable {
    public var name: String
    public var kind: Kind

    public enum Kind: Sendable, Hashable {
        /// After a child commits (add, update, delete), copy fields from the parent's latest child by `orderBy`.
        case latestChildRollup(relationshipId: Int, parentLayer: Int, childLayer: Int, orderBy: String, fields: [FieldCopy])
        /// On create, fill `field` from `polygonField` of the polygon of `polygonLayer` that contains the point.
        case pointInPolygonLookup(layer: Int, field: String, polygonLayer: Int, polygonField: String)
        /// On create, fill `field` with an address found by a geocoder.
        case reverseGeocode(layer: Int, field: String, geocoder: OfflineAddressTable)
    }

    public struct FieldCopy: Sendable, Hashable {
        public var target: String
        public var source: String
    }

    /// (layer id, field) pairs the rule writes.
    public var fieldsWritten: [(Int, String)] {
        switch kind {
        case .latestChildRollup(_, let parent, _, _, let fields): return fields.map { (parent, $0.target) }
        case .pointInPolygonLookup(let layer, let field, _, _): return [(layer, field)]
        case .reverseGeocode(let layer, let field, _): return [(layer, field)]
        }
    }
}

/// A reverse geocoder: a point to an address, or nil.
public protocol ReverseGeocoder: Sendable {
    func reverseGeocode(x: Double, y: Double) -> String?
}

/// The offline geocoder: the nearest address of a fixed table within a distance (WGS84 degrees in, metres out).
public struct OfflineAddressTable: ReverseGeocoder, Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var x: Double
        public var y: Double
        public var address: String
    }
    public var entries: [Entry]
    public var maxDistanceMeters: Double

    public init(entries: [Entry], maxDistanceMeters: Double) {
        self.entries = entries
        self.maxDistanceMeters = maxDistanceMeters
    }

    public func reverseGeocode(x: Double, y: Double) -> String? {
        var best: (Double, String)?
        for e in entries {
            let d = Geodesy.distanceMeters(lon1: x, lat1: y, lon2: e.x, lat2: e.y)
            if d <= maxDistanceMeters, best == nil || d < best!.0 { best = (d, e.address) }
        }
        return best?.1
    }
}

public enum Geodesy {
    /// Haversine distance on a sphere of the WGS84 mean radius.
    public static func distanceMeters(lon1: Double, lat1: Double, lon2: Double, lat2: Double) -> Double {
        let r = 6_371_008.8
        let p1 = lat1 * .pi / 180, p2 = lat2 * .pi / 180
        let dp = (lat2 - lat1) * .pi / 180, dl = (lon2 - lon1) * .pi / 180
        let a = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
        return 2 * r * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}
