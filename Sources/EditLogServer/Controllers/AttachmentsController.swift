import EditLog
import Hummingbird

/// Attachments: a layer's `queryAttachments`, a feature's attachment list and each attachment's bytes, and the
/// edits `addAttachment`, `updateAttachment` and `deleteAttachments` (a POST of them goes to the writer loop).
struct AttachmentsController {
    let service: FeatureService

    func addRoutes(to server: some RouterMethods<ServerRequestContext>) {
        server.getAndPost(":layer/queryAttachments") { _, context in
            try await service.runOnLayer(context, write: false) { s, layer, r in try s.queryAttachments(layer, r) }
        }
        server.getAndPost(":layer/:oid/attachments") { _, context in
            let oid = try Self.number(context, "oid")
            return try await service.runOnLayer(context, write: false) { s, layer, r in try s.attachmentInfos(layer, oid: oid, r) }
        }
        server.getAndPost(":layer/:oid/attachments/:attachment") { _, context in
            let (oid, id) = (try Self.number(context, "oid"), try Self.number(context, "attachment"))
            return try await service.runOnLayer(context, write: false) { s, layer, r in try s.attachmentBytes(layer, oid: oid, id: id, r) }
        }
        let edits: [(String, @Sendable (FeatureService, LayerSchema, Int64, ServiceRequest) throws -> Response)] = [
            ("addAttachment", { s, l, oid, r in try s.addAttachment(l, oid: oid, r) }),
            ("updateAttachment", { s, l, oid, r in try s.updateAttachment(l, oid: oid, r) }),
            ("deleteAttachments", { s, l, oid, r in try s.deleteAttachments(l, oid: oid, r) }),
        ]
        for (path, edit) in edits {
            server.getAndPost(RouterPath(":layer/:oid/\(path)")) { request, context in
                let oid = try Self.number(context, "oid")
                return try await service.runOnLayer(context, write: request.method == .post) { s, layer, r in try edit(s, layer, oid, r) }
            }
        }
    }

    /// A path's ObjectID or attachment id; another word there names no resource.
    static func number(_ context: ServerRequestContext, _ name: String) throws(ServiceError) -> Int64 {
        guard let n = context.pathParameter(name).flatMap({ Int64($0) }) else { throw .notFound }
        return n
    }
}
