import EditLog
import EditLogSync
import Foundation

/// A small in-process FeatureServer that behaves as ArcGIS documents where `editlog sync` depends on it: queries
/// answer at most `maxRecordCount` features and say `exceededTransferLimit` (pages by `resultOffset` only where
/// the layers advertise pagination; `objectIds` batches are capped too), change tracking began at `minServerGen`
/// (`extractChanges` silently answers only from there, as a real service whose data was loaded before tracking),
/// and the service-level `applyEdits` takes GlobalIDs (an add of a GlobalID it holds makes a second row, as a
/// service without a unique index on it does). Every request is counted by endpoint.
final class FakeFeatureServer: ServiceTransport, @unchecked Sendable {
    static let url = "http://fake.test/arcgis/rest/services/Fake/FeatureServer"

    struct Row {
        var oid: Int64
        var gid: String
        var attributes: [String: JSONValue]
        var geometry: JSONValue?
        var createdGen: Int64
        var gen: Int64
        var deletedGen: Int64?
    }

    private let lock = NSLock()
    /// The service's definitions (`/layers`); a test changes them between syncs as an administrator changes a service.
    var layersJSON: JSONValue
    var layerIds: [Int]
    var gidFields: [Int: String]
    var maxRecordCount: Int
    var supportsPagination: Bool
    var minServerGen: Int64
    private(set) var serverGen: Int64
    /// nil: the root states no minServerGen.
    var statesMinServerGen = true
    private var rows: [Int: [Row]] = [:]
    private var nextOid: Int64 = 1
    private var calls: [String: Int] = [:]
    var editor = "svc_editor"
    var now: Int64 = 1_790_000_000_000

    /// The Trees of Portland layers (`Fixtures/trees-of-portland/service.json`), with the given limits.
    init(maxRecordCount: Int, supportsPagination: Bool, minServerGen: Int64, serverGen: Int64) throws {
        var doc = try Fixture.json("service.json")
        func adjust(_ list: JSONValue?) -> JSONValue {
            .array((list?.arrayValue ?? []).map { l in
                var o = l.objectValue ?? [:]
                o["maxRecordCount"] = .int(Int64(maxRecordCount))
                if supportsPagination { o["advancedQueryCapabilities"] = ["supportsPagination": true] } else { o["advancedQueryCapabilities"] = nil }
                return .object(o)
            })
        }
        if case .object(var o) = doc { o["layers"] = adjust(o["layers"]); o["tables"] = adjust(o["tables"]); doc = .object(o) }
        layersJSON = doc
        let all = (doc["layers"]?.arrayValue ?? []) + (doc["tables"]?.arrayValue ?? [])
        layerIds = all.compactMap { $0["id"]?.intValue.map(Int.init) }
        var g: [Int: String] = [:]
        for l in all { if let id = l["id"]?.intValue { g[Int(id)] = l["globalIdField"]?.stringValue ?? "GlobalID" } }
        gidFields = g
        self.maxRecordCount = maxRecordCount; self.supportsPagination = supportsPagination
        self.minServerGen = minServerGen; self.serverGen = serverGen
    }

    /// Features loaded as they are (no generation of their own: before change tracking, at `createdGen`).
    func load(layer: Int, _ features: [JSONValue], gen: Int64 = 0) {
        lock.lock(); defer { lock.unlock() }
        for f in features {
            var attrs = f["attributes"]?.objectValue ?? [:]
            let gid = attrs[gidFields[layer]!]?.stringValue ?? ""
            attrs["OBJECTID"] = nil
            rows[layer, default: []].append(Row(oid: nextOid, gid: gid, attributes: attrs, geometry: f["geometry"], createdGen: gen, gen: gen))
            nextOid += 1
        }
    }

    /// An edit made on the service by someone else (a new generation).
    func update(layer: Int, globalId: String, _ values: [String: JSONValue]) {
        lock.lock(); defer { lock.unlock() }
        serverGen += 1
        guard let i = rows[layer]?.firstIndex(where: { GlobalID.normalize($0.gid) == globalId && $0.deletedGen == nil }) else { return }
        for (k, v) in values { rows[layer]![i].attributes[k] = v }
        rows[layer]![i].attributes["Editor"] = .string(editor)
        rows[layer]![i].attributes["EditDate"] = .int(now)
        rows[layer]![i].gen = serverGen
    }

    /// A field calculated on the service for every live row (an administrator filling a new field): no generation
    /// and no edit date change, so only a read of every feature finds the values.
    func calculate(layer: Int, _ field: String, _ value: (String) -> JSONValue) {
        lock.lock(); defer { lock.unlock() }
        for i in (rows[layer] ?? []).indices where rows[layer]![i].deletedGen == nil {
            rows[layer]![i].attributes[field] = value(GlobalID.normalize(rows[layer]![i].gid) ?? "")
        }
    }

    /// Changes the service's definitions (`ServiceEdits` on its `/layers` document) and removes the values of fields it
    /// no longer has, as ArcGIS's deleteFromDefinition does.
    func redefine(_ body: (inout ServiceEdits) -> Void) {
        lock.lock(); defer { lock.unlock() }
        var edits = ServiceEdits(doc: layersJSON.objectValue ?? [:])
        body(&edits)
        layersJSON = .object(edits.doc)
        let all = (layersJSON["layers"]?.arrayValue ?? []) + (layersJSON["tables"]?.arrayValue ?? [])
        layerIds = all.compactMap { $0["id"]?.intValue.map(Int.init) }
        for l in all { if let id = l["id"]?.intValue { gidFields[Int(id)] = l["globalIdField"]?.stringValue ?? "GlobalID" } }
        for l in (layersJSON["layers"]?.arrayValue ?? []) + (layersJSON["tables"]?.arrayValue ?? []) {
            guard let id = l["id"]?.intValue.map(Int.init) else { continue }
            let names = Set((l["fields"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
            for i in (rows[id] ?? []).indices { rows[id]![i].attributes = rows[id]![i].attributes.filter { names.contains($0.key) } }
        }
    }

    func delete(layer: Int, globalId: String) {
        lock.lock(); defer { lock.unlock() }
        serverGen += 1
        guard let i = rows[layer]?.firstIndex(where: { GlobalID.normalize($0.gid) == globalId && $0.deletedGen == nil }) else { return }
        rows[layer]![i].deletedGen = serverGen
    }

    /// Live rows of a layer (duplicates included).
    func live(_ layer: Int) -> [Row] {
        lock.lock(); defer { lock.unlock() }
        return (rows[layer] ?? []).filter { $0.deletedGen == nil }
    }

    func count(_ endpoint: String) -> Int { lock.lock(); defer { lock.unlock() }; return calls[endpoint] ?? 0 }

    // MARK: ServiceTransport

    func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse { answer(url, query) }
    func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse { answer(url, form) }

    private func answer(_ url: String, _ params: [(String, String)]) -> TransportResponse {
        lock.lock(); defer { lock.unlock() }
        var p: [String: String] = [:]
        for (k, v) in params { p[k] = v }
        let path = url.hasPrefix(Self.url) ? String(url.dropFirst(Self.url.count)).trimmingCharacters(in: CharacterSet(charactersIn: "/")) : url
        let parts = path.split(separator: "/").map(String.init)
        calls[parts.last ?? "root", default: 0] += 1
        let body: JSONValue
        switch parts.count {
        case 0: body = root()
        case 1 where parts[0] == "layers": body = layersJSON
        case 1 where parts[0] == "extractChanges": body = extractChanges(p)
        case 1 where parts[0] == "applyEdits": body = applyEdits(p)
        case 2 where parts[1] == "query": body = query(Int(parts[0]) ?? -1, p)
        case 2 where parts[1] == "queryAttachments": body = ["attachmentGroups": []]
        default: body = ["error": ["code": 400, "message": .string("no such resource: \(path)"), "details": []]]
        }
        return TransportResponse(status: 200, body: Array(body.serialized().utf8), contentType: "application/json")
    }

    private func root() -> JSONValue {
        let gens: [JSONValue] = layerIds.map { id in
            var o: [String: JSONValue] = ["id": .int(Int64(id)), "serverGen": .int(serverGen)]
            if statesMinServerGen { o["minServerGen"] = .int(minServerGen) }
            return .object(o)
        }
        let entries = { (key: String) -> JSONValue in
            .array((self.layersJSON[key]?.arrayValue ?? []).map { ["id": $0["id"] ?? .null, "name": $0["name"] ?? .null] })
        }
        return ["currentVersion": 11.3, "capabilities": "Query,Editing,Create,Update,Delete,ChangeTracking", "maxRecordCount": .int(Int64(maxRecordCount)),
                "extractChangesCapabilities": ["supportsReturnIdsOnly": true, "supportsLayerQueries": false],
                "changeTrackingInfo": ["lastSyncDate": .int(now), "layerServerGens": .array(gens)],
                "layers": entries("layers"), "tables": entries("tables")]
    }

    private func json(_ row: Row, geometry: Bool) -> JSONValue {
        var a = row.attributes
        a["OBJECTID"] = .int(row.oid)
        var o: [String: JSONValue] = ["attributes": .object(a)]
        if geometry, let g = row.geometry { o["geometry"] = g }
        return .object(o)
    }

    private func query(_ layer: Int, _ p: [String: String]) -> JSONValue {
        var selected = (rows[layer] ?? []).filter { $0.deletedGen == nil }
        let w = p["where"] ?? "1=1"
        if let r = w.range(of: " IN (") {
            let list = w[r.upperBound...].dropLast().split(separator: ",").map { GlobalID.normalize($0.trimmingCharacters(in: CharacterSet(charactersIn: "' "))) }
            let wanted = Set(list.compactMap { $0 })
            selected = selected.filter { GlobalID.normalize($0.gid).map(wanted.contains) ?? false }
        } else if w != "1=1" {
            return ["error": ["code": 400, "message": .string("unsupported where in the fake: \(w)"), "details": []]]
        }
        if let ids = p["objectIds"] {
            let wanted = Set(ids.split(separator: ",").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) })
            selected = selected.filter { wanted.contains($0.oid) }
        }
        selected.sort { $0.oid < $1.oid }
        if p["returnCountOnly"] == "true" { return ["count": .int(Int64(selected.count))] }
        if p["returnIdsOnly"] == "true" { return ["objectIdFieldName": "OBJECTID", "objectIds": .array(selected.map { .int($0.oid) })] }
        var offset = 0
        if let o = p["resultOffset"] {
            guard supportsPagination else { return ["error": ["code": 400, "message": "Pagination is not supported.", "details": []]] }
            offset = Int(o) ?? 0
        }
        let limit = min(maxRecordCount, p["resultRecordCount"].flatMap(Int.init) ?? maxRecordCount)
        let page = Array(selected.dropFirst(offset).prefix(limit))
        var out: [String: JSONValue] = ["objectIdFieldName": "OBJECTID", "globalIdFieldName": .string(gidFields[layer] ?? "GlobalID"),
                                        "features": .array(page.map { json($0, geometry: p["returnGeometry"] != "false") })]
        if offset + page.count < selected.count { out["exceededTransferLimit"] = true }
        return .object(out)
    }

    private func extractChanges(_ p: [String: String]) -> JSONValue {
        let gens = (p["serverGens"] ?? "[0]").trimmingCharacters(in: CharacterSet(charactersIn: "[] ")).split(separator: ",").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        // Changes before tracking began are not known: the answer starts at minServerGen whatever was asked.
        let from = max(gens.first ?? 0, minServerGen), to = min(gens.count > 1 ? gens[1] : serverGen, serverGen)
        var edits: [JSONValue] = []
        for id in layerIds {
            var adds: [JSONValue] = [], updates: [JSONValue] = [], deletes: [JSONValue] = []
            for r in rows[id] ?? [] {
                if let d = r.deletedGen {
                    if d > from && d <= to && r.createdGen <= from { deletes.append(.int(r.oid)) }
                    continue
                }
                guard r.gen > from && r.gen <= to else { continue }
                if r.createdGen > from { adds.append(json(r, geometry: true)) } else { updates.append(json(r, geometry: true)) }
            }
            edits.append(["id": .int(Int64(id)), "features": ["adds": .array(adds), "updates": .array(updates), "deleteIds": .array(deletes)]])
        }
        return ["layerServerGens": .array(layerIds.map { ["id": .int(Int64($0)), "serverGen": .int(to)] }), "edits": .array(edits)]
    }

    private func applyEdits(_ p: [String: String]) -> JSONValue {
        guard let edits = try? JSONParser.parse(Array((p["edits"] ?? "[]").utf8)), let list = edits.arrayValue else {
            return ["error": ["code": 400, "message": "edits is not JSON", "details": []]]
        }
        serverGen += 1
        var out: [JSONValue] = []
        for e in list {
            guard let id = e["id"]?.intValue.map(Int.init) else { continue }
            let gf = gidFields[id] ?? "GlobalID"
            var adds: [JSONValue] = [], updates: [JSONValue] = [], deletes: [JSONValue] = []
            for f in e["adds"]?.arrayValue ?? [] {
                var attrs = f["attributes"]?.objectValue ?? [:]
                let gid = attrs[gf]?.stringValue ?? ""
                attrs["Editor"] = .string(editor); attrs["EditDate"] = .int(now); attrs["Creator"] = .string(editor); attrs["CreationDate"] = .int(now)
                rows[id, default: []].append(Row(oid: nextOid, gid: gid, attributes: attrs, geometry: f["geometry"], createdGen: serverGen, gen: serverGen))
                adds.append(["objectId": .int(nextOid), "globalId": .string(gid), "success": true])
                nextOid += 1
            }
            for f in e["updates"]?.arrayValue ?? [] {
                let attrs = f["attributes"]?.objectValue ?? [:]
                let gid = attrs[gf]?.stringValue.flatMap(GlobalID.normalize) ?? ""
                guard let i = rows[id]?.firstIndex(where: { GlobalID.normalize($0.gid) == gid && $0.deletedGen == nil }) else {
                    updates.append(["globalId": .string(gid), "success": false, "error": ["code": 1019, "description": "Feature not found."]]); continue
                }
                for (k, v) in attrs where k != gf { rows[id]![i].attributes[k] = v }
                rows[id]![i].attributes["Editor"] = .string(editor); rows[id]![i].attributes["EditDate"] = .int(now)
                rows[id]![i].gen = serverGen
                updates.append(["objectId": .int(rows[id]![i].oid), "globalId": .string(gid), "success": true])
            }
            for d in e["deletes"]?.arrayValue ?? [] {
                let gid = d.stringValue.flatMap(GlobalID.normalize) ?? ""
                guard let i = rows[id]?.firstIndex(where: { GlobalID.normalize($0.gid) == gid && $0.deletedGen == nil }) else {
                    deletes.append(["globalId": .string(gid), "success": false, "error": ["code": 1019, "description": "Feature not found."]]); continue
                }
                rows[id]![i].deletedGen = serverGen
                deletes.append(["objectId": .int(rows[id]![i].oid), "globalId": .string(gid), "success": true])
            }
            out.append(["id": .int(Int64(id)), "addResults": .array(adds), "updateResults": .array(updates), "deleteResults": .array(deletes)])
        }
        return .array(out)
    }
}
