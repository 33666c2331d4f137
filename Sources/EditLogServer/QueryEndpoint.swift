import EditLog
import Foundation
import Hummingbird

/// `…/FeatureServer/<id>/query`: live features of a layer by `where` and/or `objectIds`, as Esri JSON or GeoJSON.
extension FeatureService {
    /// The query a request asks for (`where`, `objectIds`, `orderByFields`, paging), checked against the layer.
    func featureQuery(_ layer: LayerSchema, _ p: Parameters, paged: Bool) throws(ServiceError) -> FeatureQuery {
        var q = FeatureQuery()
        if let w = p["where"] {
            do { q.predicate = try WhereParser.parse(w) } catch { throw .query("where: \(error.description)") }
            if let pred = q.predicate {
                do { _ = try FeatureFilterCompiler.compile(pred, layer: layer) } catch { throw .query("where: \(error.message)") }
            }
        }
        if let ids = p["objectIds"] {
            q.objectIds = try Self.objectIdList(ids)
        }
        if let order = p["orderByFields"] {
            for item in order.split(separator: ",") {
                let words = item.split(separator: " ", omittingEmptySubsequences: true)
                guard let name = words.first, words.count <= 2 else { throw .query("orderByFields: \"\(item.prefix(60))\"") }
                var descending = false
                if words.count == 2 {
                    switch words[1].uppercased() {
                    case "ASC": descending = false
                    case "DESC": descending = true
                    default: throw .query("orderByFields: \"\(item.prefix(60))\"")
                    }
                }
                do { _ = try FeatureFilterCompiler.column(String(name), in: layer) } catch { throw .query("orderByFields: \(error.message)") }
                q.orderBy.append((String(name), descending))
            }
        }
        if let o = p["resultOffset"] {
            guard let n = Int(o.trimmingCharacters(in: .whitespaces)), n >= 0 else { throw .query("resultOffset must be a non-negative integer") }
            q.offset = n
        }
        if paged {
            // A query by objectIds answers up to `objectIdsPageFloor` features whatever `maxRecordCount` says:
            // Esri's Python API fetches a layer in objectIds batches of 200 and reads each answer whole.
            var limit = q.objectIds == nil ? options.maxRecordCount : max(options.maxRecordCount, Self.objectIdsPageFloor)
            if let c = p["resultRecordCount"] {
                guard let n = Int(c.trimmingCharacters(in: .whitespaces)), n >= 0 else { throw .query("resultRecordCount must be a non-negative integer") }
                limit = min(n, limit)
            }
            q.limit = limit
        } else if let c = p["resultRecordCount"] {
            guard let n = Int(c.trimmingCharacters(in: .whitespaces)), n >= 0 else { throw .query("resultRecordCount must be a non-negative integer") }
            q.limit = n
        }
        return q
    }

    /// The most features a query by `objectIds` is capped to, at least (see `featureQuery`).
    static let objectIdsPageFloor = 200

    /// `"1,2"`, `"1, 2"` or `[1,2]`.
    static func objectIdList(_ text: String) throws(ServiceError) -> [Int64] {
        if let ids = plainObjectIdList(text) { return ids }
        return try anyObjectIdList(text)
    }

    /// Any spelling Foundation's trimming accepts (Unicode spaces, signs), and the error naming a piece that
    /// is not an ObjectID: the reader `plainObjectIdList` must agree with wherever it answers.
    static func anyObjectIdList(_ text: String) throws(ServiceError) -> [Int64] {
        var t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if t.hasPrefix("[") && t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        var ids: [Int64] = []
        for piece in t.split(separator: ",") {
            let s = piece.trimmingCharacters(in: .whitespaces)
            if s.isEmpty { continue }
            guard let n = Int64(s) else { throw .query("objectIds: \"\(s.prefix(40))\" is not an ObjectID") }
            ids.append(n)
        }
        return ids
    }

    /// The common spelling (ASCII digits, commas, spaces, optional brackets) read byte by byte; nil for
    /// anything else, which `objectIdList` then reads (and names when it is wrong). Splitting and trimming
    /// with Foundation was slow for long lists.
    static func plainObjectIdList(_ text: String) -> [Int64]? {
        var text = text
        return text.withUTF8 { b -> [Int64]? in
            func space(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
            var start = 0, end = b.count
            while start < end, space(b[start]) { start += 1 }
            while end > start, space(b[end - 1]) { end -= 1 }
            if end - start >= 2, b[start] == UInt8(ascii: "["), b[end - 1] == UInt8(ascii: "]") { start += 1; end -= 1 }
            var ids: [Int64] = []
            ids.reserveCapacity((end - start) / 2 + 1)
            var value: Int64 = 0, digits = 0, negative = false, ended = false
            func flush() -> Bool {
                if digits > 0 { ids.append(negative ? -value : value) } else if negative { return false }
                (value, digits, negative, ended) = (0, 0, false, false)
                return true
            }
            for i in start..<end {
                let c = b[i]
                if c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") {
                    guard !ended, digits < 18 else { return nil }
                    value = value * 10 + Int64(c - UInt8(ascii: "0"))
                    digits += 1
                } else if c == UInt8(ascii: ",") {
                    guard flush() else { return nil }
                } else if c == 0x20 || c == 0x09 {  // inside the list, only spaces and tabs are trimmed
                    guard !negative || digits > 0 else { return nil }
                    if digits > 0 { ended = true }
                } else if c == UInt8(ascii: "-"), digits == 0, !negative {
                    negative = true
                } else {
                    return nil
                }
            }
            return flush() ? ids : nil
        }
    }

    /// The fields a query returns: `*`, a list (checked against the layer), or — as ArcGIS does when
    /// `outFields` is absent — only the ObjectID.
    func outFields(_ layer: LayerSchema, _ p: Parameters) throws(ServiceError) -> [FieldSchema] {
        let all = layer.fields.filter { $0.type != .geometry }
        guard let text = p["outFields"] else { return all.filter { $0.type == .oid || $0.name == layer.objectIdField } }
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if names.contains("*") { return all }
        var chosen: [FieldSchema] = []
        for n in names {
            guard let f = layer.field(n), f.type != .geometry else { throw .query("outFields: \(layer.name) has no field \"\(n.prefix(60))\"") }
            if !chosen.contains(where: { $0.name == f.name }) { chosen.append(f) }
        }
        return chosen
    }

    /// A query of the live features, or with `historicMoment` of the features as they were then (`withReader`): one
    /// path for both, over the layer as the state's schema has it.
    func query(_ layer: LayerSchema, _ r: ServiceRequest) throws -> Response {
        let format = r.format
        guard ["json", "pjson", "geojson"].contains(format) else { throw ServiceError.query("f=\(format.prefix(20)) is not supported (json, pjson, geojson)") }
        return try withReader(layer, r) { source, layer in try query(layer, r, from: source) }
    }

    func query(_ layer: LayerSchema, _ r: ServiceRequest, from source: any ProjectionReader) throws -> Response {
        let p = r.params
        let format = r.format
        let documents = handles.documents
        let sr = spatialReference(layer, documents: documents)
        // `outSR` is not applied: there is no reprojection, coordinates stay as stored and the response's
        // `spatialReference` always names the layer's own, so a client asking for another one can tell.
        let ref = String(layer.id)
        if p.bool("returnCountOnly", default: false) && !p.bool("returnExtentOnly", default: false) {
            let q = try featureQuery(layer, p, paged: false)
            let n = try source.queryCount(layer: ref, q)
            return out(["count": .int(Int64(n))], r)
        }
        if p.bool("returnExtentOnly", default: false) {
            let q = try featureQuery(layer, p, paged: false)
            let (n, e) = try source.queryExtent(layer: ref, q)
            var o: [String: JSONValue] = [:]
            if let e {
                var ext: [String: JSONValue] = ["xmin": .double(e[0]), "ymin": .double(e[1]), "xmax": .double(e[2]), "ymax": .double(e[3])]
                if let sr { ext["spatialReference"] = sr }
                o["extent"] = .object(ext)
            } else {
                o["extent"] = ["xmin": .null, "ymin": .null, "xmax": .null, "ymax": .null]
            }
            if p.bool("returnCountOnly", default: false) { o["count"] = .int(Int64(n)) }
            return out(.object(o), r)
        }
        if p.bool("returnIdsOnly", default: false) {
            let q = try featureQuery(layer, p, paged: false)
            let ids = try source.queryObjectIds(layer: ref, q)
            return out(["objectIdFieldName": .string(layer.objectIdField ?? "OBJECTID"), "objectIds": .array(ids.map { .int($0) })], r)
        }
        let q = try featureQuery(layer, p, paged: true)
        let fields = try outFields(layer, p)
        let returnGeometry = !layer.isTable && p.bool("returnGeometry", default: true)
        if format == "json" {
            // The common case, written straight from the rows to bytes (no per-feature dictionaries, no key sorting).
            let page = try source.queryFeatureBytes(layer: ref, q, fields: fields, returnGeometry: returnGeometry)
            return FeatureSetJSON.response(header: try featureSetHeader(layer, fields: fields, sr: sr, exceeded: page.exceededTransferLimit),
                                           features: page.bytes)
        }
        let page = try source.queryFeatures(layer: ref, q)
        let keep = Set(fields.map(\.name))
        var features: [JSONValue] = []
        features.reserveCapacity(page.features.count)
        for f in page.features {
            var attrs = f["attributes"]?.objectValue ?? [:]
            attrs = attrs.filter { keep.contains($0.key) }
            if format == "geojson" {
                var g: [String: JSONValue] = ["type": "Feature", "properties": .object(attrs),
                                              "geometry": returnGeometry ? (Geometry.geoJSON(f["geometry"]) ?? .null) : .null]
                if let oid = layer.objectIdField, let v = f["attributes"]?[oid] { g["id"] = v }
                features.append(.object(g))
            } else {
                var o: [String: JSONValue] = ["attributes": .object(attrs)]
                if returnGeometry, let g = f["geometry"] { o["geometry"] = Self.stripSpatialReference(g) }
                features.append(.object(o))
            }
        }
        if format == "geojson" {
            var fc: [String: JSONValue] = ["type": "FeatureCollection", "features": .array(features)]
            if page.exceededTransferLimit { fc["properties"] = ["exceededTransferLimit": true]; fc["exceededTransferLimit"] = true }
            return ArcGISResponse.json(.object(fc), contentType: "application/geo+json; charset=utf-8")
        }
        var result = try featureSetHeader(layer, fields: fields, sr: sr, exceeded: page.exceededTransferLimit)
        result["features"] = .array(features)
        return out(.object(result), r)
    }

    /// Everything of an Esri JSON feature set but its features.
    func featureSetHeader(_ layer: LayerSchema, fields: [FieldSchema], sr: JSONValue?, exceeded: Bool) throws -> [String: JSONValue] {
        var result: [String: JSONValue] = [
            "fields": .array(fields.map { f in
                var o: [String: JSONValue] = ["name": .string(f.name), "type": .string(f.type.esriName), "alias": .string(f.alias ?? f.name)]
                if let l = f.length { o["length"] = .int(Int64(l)) }
                return .object(o)
            }),
        ]
        if let oid = layer.objectIdField {
            result["objectIdFieldName"] = .string(oid)
            result["uniqueIdField"] = ["name": .string(oid), "isSystemMaintained": true]
        }
        if let gid = layer.globalIdField { result["globalIdFieldName"] = .string(gid) }
        if !layer.isTable, let gt = layer.geometryType {
            result["geometryType"] = .string(gt)
            if let sr { result["spatialReference"] = sr }
        }
        if exceeded { result["exceededTransferLimit"] = true }
        return result
    }

    static func stripSpatialReference(_ g: JSONValue) -> JSONValue {
        guard var o = g.objectValue else { return g }
        o["spatialReference"] = nil
        return .object(o)
    }
}
