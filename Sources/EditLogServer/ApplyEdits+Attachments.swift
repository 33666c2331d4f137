import EditLog
import Foundation

/// Attachment edits inside `applyEdits` (layer or service level), as ArcGIS takes them with
/// `useGlobalIds=true`: `attachments={"adds":[{globalId, parentGlobalId, name, contentType, data}],
/// "updates":[…], "deletes":["{GlobalID}",…]}` with the bytes in `data` (base64). Each is one session on
/// its parent feature: `edit`, `attach` or `detach`, `finish`. The parent may be a feature added earlier in
/// the same request. Not supported (each answered with an error, nothing else refused): `uploadId` (there is
/// no upload item store) and `updates` (an attachment's bytes are immutable in the log: delete it and add one).
extension FeatureService {
    func planAttachments(_ value: JSONValue, layer: LayerSchema, useGlobalIds: Bool, addedInRequest: Set<String>, log: EditLog) throws -> [PlannedEdit] {
        guard value.objectValue != nil else { throw ServiceError.invalid("attachments must be an object with adds, updates and deletes") }
        var plan: [PlannedEdit] = []
        func refuse(_ kind: EditKind, _ gid: String?, _ message: String) {
            plan.append(PlannedEdit(layer: layer, kind: kind, globalId: gid, commands: [], error: message))
        }
        let adds = value["adds"]?.arrayValue ?? [], updates = value["updates"]?.arrayValue ?? []
        let deletes: [String] = (value["deletes"]?.arrayValue ?? []).compactMap { $0.stringValue }
        guard useGlobalIds else {
            for a in adds { refuse(.attachmentAdd, a["globalId"]?.stringValue, "attachments in applyEdits need useGlobalIds=true") }
            for u in updates { refuse(.attachmentUpdate, u["globalId"]?.stringValue, "attachments in applyEdits need useGlobalIds=true") }
            for d in deletes { refuse(.attachmentDelete, d, "attachments in applyEdits need useGlobalIds=true") }
            return plan
        }
        if !layer.hasAttachments {
            for a in adds { refuse(.attachmentAdd, a["globalId"]?.stringValue, "\(layer.name) has no attachments") }
            for u in updates { refuse(.attachmentUpdate, u["globalId"]?.stringValue, "\(layer.name) has no attachments") }
            for d in deletes { refuse(.attachmentDelete, d, "\(layer.name) has no attachments") }
            return plan
        }
        let ref = String(layer.id)
        for a in adds {
            guard let gid = a["globalId"]?.stringValue.flatMap(GlobalID.normalize) else { refuse(.attachmentAdd, nil, "an attachment needs a globalId"); continue }
            guard let parent = a["parentGlobalId"]?.stringValue.flatMap(GlobalID.normalize) else { refuse(.attachmentAdd, gid, "an attachment needs a parentGlobalId"); continue }
            if !addedInRequest.contains(parent) {
                guard let found = try log.objectId(layer: ref, globalId: parent), !found.deleted else {
                    refuse(.attachmentAdd, gid, "\(layer.name) has no feature \(parent)"); continue
                }
            }
            if a["uploadId"]?.stringValue != nil && a["data"]?.stringValue == nil {
                refuse(.attachmentAdd, gid, "uploadId is not supported: send the bytes in data (base64)"); continue
            }
            guard let text = a["data"]?.stringValue, let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                refuse(.attachmentAdd, gid, "data must hold the attachment's bytes in base64"); continue
            }
            let name = a["name"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? "attachment"
            let type = a["contentType"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
            plan.append(PlannedEdit(layer: layer, kind: .attachmentAdd, globalId: gid,
                                    commands: [.edit(layer: ref, globalId: parent),
                                               .attach(attachmentId: gid, name: name, contentType: type, data: Array(data), preferredSize: "actual"),
                                               .finish]))
        }
        for u in updates {
            refuse(.attachmentUpdate, u["globalId"]?.stringValue.flatMap(GlobalID.normalize),
                   "attachment updates are not supported: the log keeps an attachment's bytes; delete it and add another")
        }
        for d in deletes {
            guard let gid = GlobalID.normalize(d) else { refuse(.attachmentDelete, nil, "\"\(d.prefix(40))\" is not a GlobalID"); continue }
            guard let info = try log.attachmentInfo(globalId: gid), let parent = try log.objectId(layer: ref, globalId: info.parentGlobalId), !parent.deleted else {
                refuse(.attachmentDelete, gid, "Attachment not found."); continue
            }
            var e = PlannedEdit(layer: layer, kind: .attachmentDelete, globalId: gid,
                                commands: [.edit(layer: ref, globalId: info.parentGlobalId), .detach(attachmentId: gid), .finish])
            e.objectId = info.id
            plan.append(e)
        }
        return plan
    }
}
