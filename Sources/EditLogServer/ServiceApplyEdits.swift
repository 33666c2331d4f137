import EditLog
import Foundation

/// `…/FeatureServer/applyEdits`: edits to several layers and tables in one request,
/// `edits=[{"id":0,"adds":[…],"updates":[…],"deletes":[…],"attachments":{…}},…]`, with `useGlobalIds`,
/// `rollbackOnFailure` (default true) and `returnEditMoment`. The layers' edits are planned and recorded in
/// the order given (a client puts parents before children); with `rollbackOnFailure=true` the whole
/// request, every layer, is one `record` — one transaction, all or nothing. The answer is ArcGIS's: an
/// array with one entry per layer, `{id, addResults, updateResults, deleteResults[, attachments]
/// [, editMoment]}`.
extension FeatureService {
    func serviceApplyEdits(_ r: ServiceRequest) throws -> JSONValue {
        let user = try requireEdit(r)
        let p = r.params
        let useGlobalIds = p.bool("useGlobalIds", default: false)
        let rollback = p.bool("rollbackOnFailure", default: true)
        guard let text = p["edits"] else { throw ServiceError.invalid("edits is required: [{\"id\":<layer>,\"adds\":[…],\"updates\":[…],\"deletes\":[…]}]") }
        let value: JSONValue
        do { value = try JSONParser.parse(Array(text.utf8)) } catch { throw ServiceError.invalid("edits: \(error.description)") }
        guard let list = value.arrayValue else { throw ServiceError.invalid("edits must be an array of {id, adds, updates, deletes, attachments}") }
        var layers: [LayerEdits] = []
        for (n, item) in list.enumerated() {
            guard item.objectValue != nil else { throw ServiceError.invalid("edits[\(n)] must be an object") }
            guard let id = item["id"]?.intValue else { throw ServiceError.invalid("edits[\(n)] has no layer id") }
            guard let layer = schema.layer(id: Int(id)) else { throw ServiceError.invalid("edits[\(n)]: the service has no layer or table \(id)") }
            guard !layers.contains(where: { $0.layer.id == layer.id }) else { throw ServiceError.invalid("edits[\(n)]: layer \(id) is listed twice") }
            var e = LayerEdits(layer: layer)
            e.adds = try Self.features(item["adds"], name: "edits[\(n)].adds")
            e.updates = try Self.features(item["updates"], name: "edits[\(n)].updates")
            e.deletes = try Self.deleteIds(item["deletes"], name: "edits[\(n)].deletes")
            if let a = item["attachments"], !a.isNull { e.attachments = a }
            layers.append(e)
        }
        let plan = try handles.read { log in try self.plan(layers, useGlobalIds: useGlobalIds, deletesByGlobalId: useGlobalIds, log: log) }
        let names = layers.map(\.layer.name).joined(separator: ", ")
        let (failures, moment, _, _) = try commit(plan, rollback: rollback, user: user, device: r.device, name: "applyEdits \(names) by \(user)")
        let returnMoment = p.bool("returnEditMoment", default: false)
        var out: [JSONValue] = []
        for e in layers {
            var o = try results(plan, failures: failures, layer: e.layer, attachments: e.attachments != nil)
            o["id"] = .int(Int64(e.layer.id))
            if returnMoment { o["editMoment"] = .int(moment) }
            out.append(.object(o))
        }
        return .array(out)
    }

    /// `deletes` inside `edits`: an array of ObjectIDs or GlobalIDs, or a comma-separated string.
    static func deleteIds(_ v: JSONValue?, name: String) throws(ServiceError) -> [String] {
        guard let v, !v.isNull else { return [] }
        if let s = v.stringValue { return try idList(s) }
        guard let a = v.arrayValue else { throw .invalid("\(name) must be an array of ObjectIDs or GlobalIDs") }
        return try a.map { (x: JSONValue) throws(ServiceError) -> String in
            if let i = x.intValue { return String(i) }
            if let s = x.stringValue { return s }
            throw .invalid("\(name): \(x.serialized().prefix(40)) is not an ObjectID or a GlobalID")
        }
    }
}
