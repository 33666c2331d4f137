extension Geometry {
    /// Whether two Esri JSON geometries are the same shape: coordinates compared as numbers (an integer `1`
    /// equals `1.0`) and any `spatialReference` ignored (the service echoes one; the log stores them without
    /// reprojecting). A missing geometry equals `null`. The feature service (an update must not move a
    /// feature) and sync (did the remote side move it?) ask the same question.
    public static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        func norm(_ v: JSONValue) -> JSONValue {
            switch v {
            case .int(let i): return .double(Double(i))
            case .array(let xs): return .array(xs.map(norm))
            case .object(let o): return .object(o.filter { $0.key != "spatialReference" }.mapValues(norm))
            default: return v
            }
        }
        return norm(a ?? .null) == norm(b ?? .null)
    }
}
