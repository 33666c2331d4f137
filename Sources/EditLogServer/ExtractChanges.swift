import EditLog
import Foundation
import Hummingbird

/// `…/FeatureServer/extractChanges`: the features added, updated and deleted since a server generation.
/// A server generation is a log position; the changes are the change index's between two positions
/// (`EditLog.changedFeatures`), or with attachments the facade's `diff` (a feature created and deleted in between is
/// left out, as ArcGIS does). An update that moved only editor tracking is an update too: the row changed, and a sync
/// client gets its new Editor and EditDate.
///
/// `returnAttachments=true` adds each layer's attachment changes in the window, in the shape of applyEdits'
/// attachments: `"attachments": {"adds": [...], "updates": [...], "deleteIds": [attachment GlobalIDs]}`. An
/// added or updated (renamed or replaced) attachment carries `id`, `globalId`, `parentGlobalId`,
/// `parentObjectId`, `name`, `contentType`, `size`, `keywords`, and `url` (its bytes on this service) or,
/// with `returnAttachmentsDataByUrl=false`, `data` (the bytes in base64). An attachment added and removed
/// in the window is left out, as its feature would be.
extension FeatureService {
    func extractChanges(_ r: ServiceRequest) throws -> Response {
        let p = r.params
        // A device that wrote through another node a moment ago gets its write back from this one too.
        try handles.refresh()
        let last = try handles.read { try $0.lastPosition() }
        // layers: `[0,1]` or `0,1`; all layers when absent.
        var layers = schema.layers
        if let text = p["layers"] {
            let ids = try Self.objectIdList(text)
            layers = []
            for id in ids {
                guard let l = schema.layer(id: Int(id)) else { throw ServiceError.invalid("layers: no layer \(id)") }
                layers.append(l)
            }
        }
        // serverGens: [from, to]; layerServerGens: [{"id":0,"serverGen":N}] per layer.
        var from: [Int: Int64] = [:]
        var to = last
        if let text = p["serverGens"] {
            let gens = try Self.objectIdList(text)
            guard let first = gens.first, gens.count <= 2 else { throw ServiceError.invalid("serverGens must be [minServerGen, serverGen]") }
            for l in layers { from[l.id] = first }
            if gens.count == 2 { to = min(gens[1], last) }
        }
        if let text = p["layerServerGens"] {
            guard let list = (try? JSONParser.parse(Array(text.utf8)))?.arrayValue else { throw ServiceError.invalid("layerServerGens must be a JSON array") }
            for item in list {
                guard let id = item["id"]?.intValue, let gen = item["serverGen"]?.intValue else { throw ServiceError.invalid("layerServerGens: each needs id and serverGen") }
                from[Int(id)] = gen
            }
        }
        let returnInserts = p.bool("returnInserts", default: true)
        let returnUpdates = p.bool("returnUpdates", default: true)
        let returnDeletes = p.bool("returnDeletes", default: true)
        let idsOnly = p.bool("returnIdsOnly", default: false)
        let withAttachments = p.bool("returnAttachments", default: false) && !idsOnly
        let byURL = p.bool("returnAttachmentsDataByUrl", default: true)
        // Each layer's member is written to bytes: its features as `query` writes them (`queryFeatureBytes`), the rest
        // as documents. A pretty answer (f=pjson) is the same document, read back and indented.
        var edits: [[UInt8]] = []
        for l in layers {
            let start = max(1, from[l.id] ?? 1)
            var adds: [String] = [], updates: [String] = [], deletes: [String] = []
            var attachments = AttachmentChanges()
            // Without attachments, the change index answers (the window's rows only); with them, or in a log without the
            // index, `diff` (its `@attachment:` fields name the attachment changes).
            if start < to, !withAttachments,
               let indexed = try handles.read({ try $0.changedFeatures(layer: String(l.id), after: start, upTo: to) }) {
                for (g, change) in indexed {
                    switch change {
                    case .added: adds.append(g)
                    case .updated: updates.append(g)
                    case .deleted: deletes.append(g)
                    }
                }
            } else if start < to {
                let diff = try handles.read { try $0.diff(from: .position(start), to: .position(to), layer: String(l.id), clock: .recorded) }
                for c in diff.changes where c.layer == l.id {
                    switch c.kind {
                    case .added: adds.append(c.globalId)
                    case .updated: updates.append(c.globalId)
                    case .deleted: deletes.append(c.globalId)
                    }
                    if withAttachments { attachments.note(c) }
                }
            }
            let ref = String(l.id)
            let found = try handles.read { try $0.objectIds(layer: ref, globalIds: adds + updates + deletes) }
            func oids(_ gids: [String]) -> [Int64] { gids.compactMap { GlobalID.normalize($0).flatMap { found[$0]?.objectId } }.sorted() }
            let (addIds, updateIds, deleteIds) = (oids(adds), oids(updates), oids(deletes))
            var members: [(key: String, bytes: [UInt8])] = [("id", JSONValue.int(Int64(l.id)).serializedBytes())]
            if let oid = l.objectIdField { members.append(("objectIdFieldName", JSONValue.string(oid).serializedBytes())) }
            if let gid = l.globalIdField { members.append(("globalIdFieldName", JSONValue.string(gid).serializedBytes())) }
            func idList(_ ids: [Int64]) -> [UInt8] { JSONValue.array(ids.map { .int($0) }).serializedBytes() }
            if idsOnly {
                var ids: [(key: String, bytes: [UInt8])] = []
                if returnInserts { ids.append(("adds", idList(addIds))) }
                if returnUpdates { ids.append(("updates", idList(updateIds))) }
                if returnDeletes { ids.append(("deletes", idList(deleteIds))) }
                members.append(("objectIds", Self.objectBytes(ids)))
            } else {
                func load(_ ids: [Int64]) throws -> [UInt8] {
                    if ids.isEmpty { return Array("[]".utf8) }
                    let page = try handles.read {
                        try $0.queryFeatureBytes(layer: ref, FeatureQuery(objectIds: ids, limit: ids.count), fields: l.fields.filter { $0.type != .geometry },
                                                 returnGeometry: !l.isTable)
                    }
                    return Array("[".utf8) + page.bytes + Array("]".utf8)
                }
                var features: [(key: String, bytes: [UInt8])] = []
                if returnInserts { features.append(("adds", try load(addIds))) }
                if returnUpdates { features.append(("updates", try load(updateIds))) }
                if returnDeletes { features.append(("deleteIds", idList(deleteIds))) }
                members.append(("features", Self.objectBytes(features)))
                if withAttachments { members.append(("attachments", try attachmentEdits(attachments, layer: l, byURL: byURL, r).serializedBytes())) }
            }
            edits.append(Self.objectBytes(members))
        }
        let gens = JSONValue.array(layers.map { ["id": .int(Int64($0.id)), "serverGen": .int(to)] })
        let body = Self.objectBytes([("edits", Array("[".utf8) + Array(edits.joined(separator: Array(",".utf8))) + Array("]".utf8)),
                                     ("layerServerGens", gens.serializedBytes())])
        if r.pretty { return out(try JSONParser.parse(body), r) }
        return ArcGISResponse.bytes(body)
    }

    /// A JSON object of members already written, in key order as `JSONValue` writes an object.
    static func objectBytes(_ members: [(key: String, bytes: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (i, m) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.string(m.key).write(to: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: m.bytes)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// The attachment changes of one layer in an `extractChanges` window, from the diff's `@attachment:` fields
/// (old name → new name: null → name is an add, name → null a delete, name → name a rename or a replacement).
struct AttachmentChanges {
    var adds: [String] = []
    var updates: [String] = []
    var deletes: [String] = []

    mutating func note(_ c: FeatureChange) {
        for f in c.fields where f.field.hasPrefix("@attachment:") {
            let id = String(f.field.dropFirst("@attachment:".count))
            switch (f.old.isNull, f.new.isNull) {
            case (true, false): adds.append(id)
            case (false, true): deletes.append(id)
            case (false, false): updates.append(id)
            case (true, true): break
            }
        }
    }
}

extension FeatureService {
    /// The most attachment bytes one `extractChanges` response embeds (`returnAttachmentsDataByUrl=false`): 32 MiB.
    static let maxEmbeddedAttachmentBytes: Int64 = 32 << 20

    /// One attachment as a change or a replica sends it: its info with its bytes' URL on this service, or the bytes
    /// in base64. Embedded bytes are held whole in the response: bounded (`embedded` counts them across the
    /// response), so that a few requests cannot take the server's memory; larger answers ask for URLs, which stream.
    static func attachmentEntry(_ a: AttachmentInfo, parentObjectId: Int64, layer: LayerSchema, byURL: Bool, embedded: inout Int64, log: EditLog,
                                _ r: ServiceRequest, failure: String) throws -> JSONValue? {
        guard case .object(var o) = attachmentJSON(a, parentObjectId: parentObjectId) else { return nil }
        if byURL {
            o["url"] = .string("\(r.serviceURL)/\(layer.id)/\(parentObjectId)/attachments/\(a.id)")
        } else {
            embedded += a.size
            guard embedded <= maxEmbeddedAttachmentBytes else {
                throw ServiceError(code: 400, message: failure,
                                   details: ["the attachments hold more than \(maxEmbeddedAttachmentBytes) bytes: ask for them by URL (returnAttachmentsDataByUrl=true)"])
            }
            guard let bytes = try log.blob(sha256: a.sha256) else { return nil }
            o["data"] = .string(Data(bytes).base64EncodedString())
        }
        return .object(o)
    }

    /// `{"adds", "updates", "deleteIds"}` for `AttachmentChanges`: each live attachment with its URL on this
    /// service or its bytes in base64. One that is gone by now (removed after the window) is left out.
    func attachmentEdits(_ changes: AttachmentChanges, layer: LayerSchema, byURL: Bool, _ r: ServiceRequest) throws -> JSONValue {
        let ref = String(layer.id)
        var embedded: Int64 = 0
        func infos(_ ids: [String]) throws -> [JSONValue] {
            try handles.read { log in
                var out: [JSONValue] = []
                for id in ids.sorted() {
                    guard let a = try log.attachmentInfo(globalId: id),
                          let parent = try log.objectId(layer: ref, globalId: a.parentGlobalId), !parent.deleted else { continue }
                    if let o = try Self.attachmentEntry(a, parentObjectId: parent.objectId, layer: layer, byURL: byURL, embedded: &embedded,
                                                        log: log, r, failure: "Unable to extract changes.") { out.append(o) }
                }
                return out
            }
        }
        let deleteIds = changes.deletes.compactMap(GlobalID.normalize).sorted().map { JSONValue.string($0) }
        return ["adds": .array(try infos(changes.adds)), "updates": .array(try infos(changes.updates)), "deleteIds": .array(deleteIds)]
    }
}
