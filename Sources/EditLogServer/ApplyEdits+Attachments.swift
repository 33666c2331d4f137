import EditLog
import Foundation

/// Attachment edits inside `applyEdits` (layer or service level), as ArcGIS takes them with
/// `useGlobalIds=true`: `attachments={"adds":[{globalId, parentGlobalId, name, contentType, data}],
/// "updates":[…], "deletes":["{GlobalID}",…]}` with the bytes in `data` (base64). Each is one session on
/// its parent feature: `edit`, `attach` or `detach`, `finish`. The parent may be a feature added earlier in
/// the same request. An update (`{globalId, name, contentType, data}`, each but `globalId` optional) that keeps
/// the bytes is a rename (`renameAttachment`, same ids); one with other bytes or another content type replaces
/// the attachment (`detach` and `attach` in one session: the log keeps every attachment's bytes, so the new
/// bytes get a new GlobalID and id, which the result names). Not supported (answered with an error, nothing else
/// refused): `uploadId` (there is no upload item store).
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
            guard let gid = u["globalId"]?.stringValue.flatMap(GlobalID.normalize) else { refuse(.attachmentUpdate, nil, "an attachment update needs a globalId"); continue }
            guard let info = try log.attachmentInfo(globalId: gid), let parent = try log.objectId(layer: ref, globalId: info.parentGlobalId), !parent.deleted else {
                refuse(.attachmentUpdate, gid, "Attachment not found."); continue
            }
            var data: [UInt8]?
            if let text = u["data"]?.stringValue {
                guard let d = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else { refuse(.attachmentUpdate, gid, "data must hold the attachment's bytes in base64"); continue }
                data = Array(d)
            } else if u["uploadId"]?.stringValue != nil {
                refuse(.attachmentUpdate, gid, "uploadId is not supported: send the bytes in data (base64)"); continue
            }
            plan.append(attachmentUpdate(info, layer: layer, name: u["name"]?.stringValue, contentType: u["contentType"]?.stringValue, data: data))
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

    /// The plan of one attachment update: nothing when it changes nothing, a rename when the bytes and content
    /// type stay, else a replacement under a new GlobalID (the result's `globalId` and `objectId`).
    func attachmentUpdate(_ info: AttachmentInfo, layer: LayerSchema, name: String?, contentType: String?, data: [UInt8]?) -> PlannedEdit {
        let ref = String(layer.id)
        let newName: String = (name?.isEmpty == false ? name : nil) ?? info.name
        let newType: String = (contentType?.isEmpty == false ? contentType : nil) ?? info.contentType
        var sameBytes = true
        if let data { sameBytes = Hex.encode(EventHash.sha256(data)) == info.sha256 }
        var e = PlannedEdit(layer: layer, kind: .attachmentUpdate, globalId: info.globalId, commands: [])
        e.objectId = info.id
        if sameBytes && newType == info.contentType {
            if newName != info.name {
                e.commands = [.edit(layer: ref, globalId: info.parentGlobalId), .renameAttachment(attachmentId: info.globalId, name: newName), .finish]
            }
            return e
        }
        guard let data else {
            e.error = "a new contentType needs the attachment's bytes in data (the log cannot change the type of stored bytes)"
            return e
        }
        let replacement = "{" + handles.ids.next().uppercasedString + "}"
        e.globalId = GlobalID.normalize(replacement)
        e.objectId = nil
        e.replaces = info.globalId
        e.commands = [.edit(layer: ref, globalId: info.parentGlobalId), .detach(attachmentId: info.globalId),
                      .attach(attachmentId: replacement, name: newName, contentType: newType, data: data, preferredSize: "actual"), .finish]
        return e
    }
}
