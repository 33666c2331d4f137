import EditLog
import Foundation

/// The `attachments` parameter of a layer's `applyEdits` (with `useGlobalIds=true`, as ArcGIS requires):
/// `{"adds":[{"globalId","parentGlobalId","name","contentType","data"(base64)}],"deletes":["{…}"]}`. Each
/// attachment is one session on its parent (`edit`, `attach` with the given GlobalID or `detach`, `finish`),
/// planned after the request's features, so a parent added by the same request exists when its attachment comes.
extension FeatureService {
    func planAttachments(_ text: String?, layer: LayerSchema, useGlobalIds: Bool, log: EditLog) throws(ServiceError) -> [PlannedEdit] {
        guard let text else { return [] }
        let v: JSONValue
        do { v = try JSONParser.parse(Array(text.utf8)) } catch { throw .invalid("attachments: \(error.description)") }
        guard v.objectValue != nil else { throw .invalid("attachments must be an object with adds, updates or deletes") }
        guard useGlobalIds else { throw .invalid("attachments need useGlobalIds=true") }
        var plan: [PlannedEdit] = []
        for a in v["adds"]?.arrayValue ?? [] {
            var e = PlannedEdit(kind: .attach, commands: [])
            guard let g = a["globalId"]?.stringValue.flatMap(GlobalID.normalize), let parent = a["parentGlobalId"]?.stringValue.flatMap(GlobalID.normalize) else {
                e.error = "an attachment needs globalId and parentGlobalId"; plan.append(e); continue
            }
            e.globalId = g
            guard let data = a["data"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
                e.error = "attachment \(g): data must be base64"; plan.append(e); continue
            }
            let name = a["name"]?.stringValue ?? "attachment"
            let type = a["contentType"]?.stringValue ?? "application/octet-stream"
            e.commands = [.edit(layer: String(layer.id), globalId: parent),
                          .attach(attachmentId: g, name: name, contentType: type, data: Array(data), preferredSize: "actual"), .finish]
            plan.append(e)
        }
        for d in v["deletes"]?.arrayValue ?? [] {
            var e = PlannedEdit(kind: .detach, commands: [])
            guard let g = d.stringValue.flatMap(GlobalID.normalize) else { e.error = "attachments.deletes: not a GlobalID"; plan.append(e); continue }
            e.globalId = g
            do {
                guard let info = try log.attachmentInfo(globalId: g) else { e.error = "Attachment not found."; plan.append(e); continue }
                e.commands = [.edit(layer: String(layer.id), globalId: info.parentGlobalId), .detach(attachmentId: g), .finish]
            } catch {
                e.error = error.message
            }
            plan.append(e)
        }
        return plan
    }
}
