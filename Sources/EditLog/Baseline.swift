import EditLogCore
import Foundation

/// A baseline feature set (the Esri JSON `query` response shape) for one layer.
public struct BaselineSet: Sendable {
    public var name: String
    /// A layer name or id; nil to take it from the file name's stem.
    public var layer: String?
    public var json: JSONValue
    public init(name: String, layer: String?, json: JSONValue) { self.name = name; self.layer = layer; self.json = json }
}

enum Baseline {
    struct Feature { var layer: Int; var globalId: String; var event: FeatureBaselined }

    /// Checks every feature (GlobalID, known fields, typed values, geometry) before anything is written.
    static func prepare(_ sets: [BaselineSet], schema: ServiceSchema) throws(EditLogError) -> [Feature] {
        var out: [Feature] = []
        var seen = Set<String>()
        for set in sets {
            let stem = (set.name as NSString).lastPathComponent.components(separatedBy: ".").first ?? set.name
            let ref = set.layer ?? stem
            guard let layer = schema.layer(ref) else {
                throw EditLogError(.invalidInput, "no layer \"\(ref)\" for this feature set; name the file after the layer or pass LAYER=FILE", at: set.name)
            }
            guard let gidField = layer.globalIdField else {
                throw EditLogError(.invalidInput, "layer \(layer.name) has no GlobalID field; EditLog keys features on GlobalIDs", at: set.name)
            }
            let gidKey = gidField.lowercased()
            guard case .object(let root) = set.json else { throw EditLogError(.invalidInput, "a feature set must be a JSON object", at: set.name) }
            if root["error"] != nil { throw EditLogError(.invalidInput, "the file is an ArcGIS error response", at: set.name) }
            guard let features = root["features"]?.arrayValue else { throw EditLogError(.invalidInput, "no \"features\" array", at: set.name) }
            for (i, f) in features.enumerated() {
                let path = "\(set.name): features[\(i)]"
                guard case .object(let attrs)? = f["attributes"] else { throw EditLogError(.invalidInput, "feature has no \"attributes\" object", at: path) }
                guard let rawGid = attrs.first(where: { $0.key.lowercased() == gidKey })?.value.stringValue,
                      let gid = GlobalID.normalize(rawGid) else {
                    throw EditLogError(.invalidInput, "feature has no valid \(gidField)", at: path)
                }
                guard seen.insert(gid).inserted else { throw EditLogError(.conflict, "GlobalID \(gid) appears twice", at: path) }
                var clean: [String: JSONValue] = [:]
                for (k, v) in attrs {
                    guard let field = layer.field(k) else { throw EditLogError(.invalidInput, "unknown field \"\(k)\" on layer \(layer.name)", at: path) }
                    if field.type == .oid || field.type == .globalID || field.name.lowercased() == gidKey { continue }
                    if v.isNull { clean[field.name] = .null; continue }
                    var f2 = field
                    f2.nullable = true
                    if case .unknown = field.type { clean[field.name] = v; continue }
                    if field.type.isUnsupportedInPopup { clean[field.name] = v; continue }
                    do { clean[field.name] = try FieldValidator.normalize(v, for: f2, layer: layer.name) } catch { throw error.at(path) }
                }
                var event = FeatureBaselined(layer: layer.id, globalId: gid, attributes: clean, geometry: nil)
                if let g = f["geometry"], !g.isNull {
                    guard !layer.isTable, let gt = layer.geometryType else { throw EditLogError(.invalidInput, "\(layer.name) is a table; features have no geometry", at: path) }
                    try Geometry.validate(g, geometryType: gt, at: path)
                    event.geometry = g
                    event.namesGeometry = true
                }
                out.append(Feature(layer: layer.id, globalId: gid, event: event))
            }
        }
        return out
    }
}
