import EditLog
import Foundation
import Hummingbird

/// Attachments (read-only): `/<id>/<oid>/attachments`, `/<id>/<oid>/attachments/<attachmentId>` (the bytes)
/// and `/<id>/queryAttachments`.
extension FeatureService {
    static func attachmentJSON(_ a: AttachmentInfo, parentObjectId: Int64? = nil) -> JSONValue {
        var o: [String: JSONValue] = ["id": .int(a.id), "globalId": .string(a.globalId), "parentGlobalId": .string(a.parentGlobalId), "name": .string(a.name),
                                      "contentType": .string(a.contentType), "size": .int(a.size), "keywords": .string(a.keywords ?? "")]
        if let parentObjectId { o["parentObjectId"] = .int(parentObjectId) }
        return .object(o)
    }

    func requireAttachments(_ layer: LayerSchema) throws(ServiceError) {
        guard layer.hasAttachments else { throw ServiceError(code: 400, message: "Requested operation is not supported by this service.", details: ["\(layer.name) has no attachments"]) }
    }

    /// A live feature's GlobalID by ObjectID, or ArcGIS's error for a missing one.
    func liveGlobalId(_ layer: LayerSchema, _ oid: Int64) throws -> String {
        try handles.read { log in try liveGlobalId(layer, oid, in: log) }
    }

    /// The same in `source` (the live log, or a historic moment's state).
    func liveGlobalId(_ layer: LayerSchema, _ oid: Int64, in source: any ProjectionReader) throws -> String {
        guard let found = try source.globalId(layer: String(layer.id), objectId: oid), !found.deleted else {
            throw ServiceError(code: 404, message: "Feature not found.", details: ["\(layer.name) has no feature \(oid)"])
        }
        return found.globalId
    }

    /// The attachments of a feature (with `historicMoment`, those it had then).
    func attachmentInfos(_ layer: LayerSchema, oid: Int64, _ r: ServiceRequest) throws -> Response {
        try requireAttachments(layer)
        let infos = try withReader(layer, r) { source, layer in
            let g = try liveGlobalId(layer, oid, in: source)
            return try source.attachmentInfos(parents: [g])[g] ?? []
        }
        return out(["attachmentInfos": .array(infos.map { Self.attachmentJSON($0) })], r)
    }

    /// An attachment's bytes (with `historicMoment`, of an attachment the feature had then: the infos come from that
    /// moment, the bytes from the log, which keeps every attachment's bytes).
    func attachmentBytes(_ layer: LayerSchema, oid: Int64, id: Int64, _ r: ServiceRequest) throws -> Response {
        try requireAttachments(layer)
        let info = try withReader(layer, r) { source, layer in
            let g = try liveGlobalId(layer, oid, in: source)
            return try source.attachmentInfo(id: id).flatMap { $0.parentGlobalId == g ? $0 : nil }
        }
        guard let a = info, let layout = try handles.read({ try $0.blobLayout(sha256: a.sha256) }) else {
            throw ServiceError(code: 404, message: "Attachment not found.", details: [], status: .notFound)
        }
        var headers = HTTPFields()
        headers[.contentType] = a.contentType
        let safeName = a.name.replacingOccurrences(of: "\"", with: "'").unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }
        headers[.contentDisposition] = "inline; filename=\"\(String(String.UnicodeScalarView(safeName)))\""
        headers[.eTag] = "\"\(a.sha256)\""
        // Sent a piece at a time (1 MiB above 4 MiB, `BlobStorage`), each read when the last was written: a large
        // attachment is never held whole, whatever its size and however many download it at once. The bytes are
        // counted and hashed on the way and the last piece is held back until both match (as a bundle's reader
        // does): stored bytes that are not the attachment's end the transfer short, never as a complete response,
        // and nothing is ever written past the announced length.
        let handles = self.handles, sha = a.sha256, size = layout.size, pieces = layout.pieces, logError = r.logError
        let body = ResponseBody(contentLength: Int(size)) { writer in
            var digest = ContentDigest(), sent: Int64 = 0, held: [UInt8]?
            func fail(_ what: String) -> EditLogError {
                let e = EditLogError(.corrupt, "attachment bytes \(sha): \(what); the download was cut short (run editlog verify)")
                logError(e.description)
                return e
            }
            for index in 0..<pieces {
                guard let piece = try handles.read({ try $0.blobPiece(sha256: sha, index: index) }) else { throw fail("piece \(index) of \(pieces) is missing") }
                sent += Int64(piece.count)
                guard sent <= size else { throw fail("the stored bytes are more than the \(size) listed") }
                digest.update(piece)
                if let held { try await writer.write(ByteBuffer(bytes: held)) }
                held = piece
            }
            guard sent == size else { throw fail("the stored bytes are \(sent) of the \(size) listed") }
            guard Hex.encode(digest.finalize()) == sha.lowercased() else { throw fail("the stored bytes have another SHA-256") }
            if let held { try await writer.write(ByteBuffer(bytes: held)) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `queryAttachments`: `objectIds`, `globalIds` and/or `definitionExpression` choose the parents.
    func queryAttachments(_ layer: LayerSchema, _ r: ServiceRequest) throws -> Response {
        try requireAttachments(layer)
        let p = r.params
        var q = FeatureQuery()
        if let w = p["definitionExpression"] {
            do { q.predicate = try WhereParser.parse(w) } catch { throw ServiceError.query("definitionExpression: \(error.description)") }
            if let pred = q.predicate {
                do { _ = try FeatureFilterCompiler.compile(pred, layer: layer) } catch { throw ServiceError.query("definitionExpression: \(error.message)") }
            }
        }
        if let ids = p["objectIds"] { q.objectIds = try Self.objectIdList(ids) }
        let ref = String(layer.id)
        if let g = p["globalIds"] {
            // The GlobalIDs go into the filter (bound, through the layer's own GlobalID column), so only those
            // parents are read, not the whole layer.
            let ids = Set(try Self.idList(g).compactMap(GlobalID.normalize)).sorted()
            if let gidField = layer.globalIdField {
                let wanted: FeaturePredicate = ids.isEmpty ? .compare(.value(.int(0)), .equal, .value(.int(1)))
                    : .inList(.field(gidField), ids.map { .value(.string($0)) }, negated: false)
                q.predicate = q.predicate.map { .and($0, wanted) } ?? wanted
            } else {
                q.objectIds = []
            }
        }
        let groups: [JSONValue] = try withReader(layer, r) { log, _ in
            let parents = try log.queryIdentities(layer: ref, q).map { (oid: $0.objectId, gid: $0.globalId) }
            let infos = try log.attachmentInfos(parents: parents.map(\.gid))
            return parents.compactMap { parent in
                guard let list = infos[parent.gid], !list.isEmpty else { return nil }
                return ["parentObjectId": .int(parent.oid), "parentGlobalId": .string(parent.gid),
                        "attachmentInfos": .array(list.map { Self.attachmentJSON($0, parentObjectId: parent.oid) })]
            }
        }
        return out(["attachmentGroups": .array(groups)], r)
    }
}

/// Attachment edits: `/<id>/<oid>/addAttachment` (multipart/form-data, the file in part `attachment`),
/// `/<id>/<oid>/updateAttachment` (`attachmentId` and the new file in part `attachment`) and
/// `/<id>/<oid>/deleteAttachments` (`attachmentIds`), each one edit session of the token's user: `edit`,
/// `attach`, `renameAttachment` or `detach`, `finish`.
extension FeatureService {
    /// Records one session on a feature; nil on success, else the refusal.
    func recordSession(_ ops: [ScriptCommand.Operation], name: String, user: String, device: String) -> EditLogError? {
        let at = Timestamp.format(milliseconds: handles.clock.now())
        let session = handles.ids.next().lowercasedString
        let commands = ops.enumerated().map { ScriptCommand(line: $0.offset + 1, op: $0.element, actor: user, device: device, at: at, session: session) }
        let digest = InputFiles.sha256(Array("\(name) \(user) \(at) \(session)".utf8))
        do {
            _ = try handles.write { log in try log.record(commands, name: name, sha256: digest, allowRepeat: true) }
            return nil
        } catch let e as EditLogError {
            return e
        } catch {
            return EditLogError(.io, "\(error)")
        }
    }

    func addAttachment(_ layer: LayerSchema, oid: Int64, _ r: ServiceRequest) throws -> Response {
        let user = try requireEdit(r)
        try requireAttachments(layer)
        let g = try liveGlobalId(layer, oid)
        guard let file = r.params.files["attachment"] else { throw ServiceError.invalid("attachment: a file part is required (multipart/form-data)") }
        let attachmentId = "{" + handles.ids.next().uppercasedString + "}"
        let name = file.filename.isEmpty ? "attachment" : file.filename
        let ops: [ScriptCommand.Operation] = [.edit(layer: String(layer.id), globalId: g),
                                              .attach(attachmentId: attachmentId, name: name, contentType: file.contentType, data: file.bytes, preferredSize: "actual"),
                                              .finish]
        if let e = recordSession(ops, name: "addAttachment \(layer.name) \(oid) by \(user)", user: user, device: r.device) {
            return out(["addAttachmentResult": ["success": false, "error": ["code": .int(Int64(Self.code(e))), "description": .string(e.message)]]], r)
        }
        let added = try handles.read { try $0.attachmentInfos(parents: [g]) }[g]?.first { $0.globalId == attachmentId }
        return out(["addAttachmentResult": ["objectId": added.map { .int($0.id) } ?? .null, "globalId": .string(attachmentId), "success": true]], r)
    }

    /// `updateAttachment`: new bytes replace the attachment (a new GlobalID and id, named in the answer: the log
    /// keeps the old bytes); the same bytes under another file name rename it (same ids); the same file changes nothing.
    func updateAttachment(_ layer: LayerSchema, oid: Int64, _ r: ServiceRequest) throws -> Response {
        let user = try requireEdit(r)
        try requireAttachments(layer)
        let g = try liveGlobalId(layer, oid)
        guard let text = r.params["attachmentId"], let id = Int64(text.trimmingCharacters(in: .whitespaces)) else {
            throw ServiceError.invalid("attachmentId is required (the attachment's id)")
        }
        guard let file = r.params.files["attachment"] else {
            if r.params["uploadId"] != nil { throw ServiceError.invalid("uploadId is not supported: send the file in part attachment (multipart/form-data)") }
            throw ServiceError.invalid("attachment: a file part is required (multipart/form-data)")
        }
        guard let info = try handles.read({ try $0.attachmentInfo(id: id) }), info.parentGlobalId == g else {
            let missing: JSONValue = ["objectId": .int(id), "globalId": .null, "success": false, "error": ["code": 1019, "description": "Attachment not found."]]
            return out(["updateAttachmentResult": missing], r)
        }
        // A part without its own Content-Type (the parser's octet-stream default) keeps the attachment's.
        let type: String? = file.contentType.lowercased() == "application/octet-stream" ? nil : file.contentType
        let planned = attachmentUpdate(info, layer: layer, name: file.filename, contentType: type, data: file.bytes)
        if !planned.commands.isEmpty, let e = recordSession(planned.commands, name: "updateAttachment \(layer.name) \(oid) by \(user)", user: user, device: r.device) {
            let error: JSONValue = ["code": .int(Int64(Self.code(e))), "description": .string(e.message)]
            let failed: JSONValue = ["objectId": .int(id), "globalId": .string(info.globalId), "success": false, "error": error]
            return out(["updateAttachmentResult": failed], r)
        }
        let gid: String = planned.globalId ?? info.globalId
        var now: Int64? = info.id
        if planned.replaces != nil { now = try handles.read { try $0.attachmentInfo(globalId: gid) }?.id }
        let result: JSONValue = ["objectId": now.map(JSONValue.int) ?? .null, "globalId": .string(gid), "success": true]
        return out(["updateAttachmentResult": result], r)
    }

    func deleteAttachments(_ layer: LayerSchema, oid: Int64, _ r: ServiceRequest) throws -> Response {
        let user = try requireEdit(r)
        try requireAttachments(layer)
        let g = try liveGlobalId(layer, oid)
        guard let text = r.params["attachmentIds"] else { throw ServiceError.invalid("attachmentIds is required") }
        let ids = try Self.objectIdList(text)
        let existing = try handles.read { try $0.attachmentInfos(parents: [g]) }[g] ?? []
        var results: [JSONValue] = []
        for id in ids {
            guard let a = existing.first(where: { $0.id == id }) else {
                results.append(["objectId": .int(id), "globalId": .null, "success": false, "error": ["code": 1019, "description": "Attachment not found."]])
                continue
            }
            let ops: [ScriptCommand.Operation] = [.edit(layer: String(layer.id), globalId: g), .detach(attachmentId: a.globalId), .finish]
            if let e = recordSession(ops, name: "deleteAttachments \(layer.name) \(oid) by \(user)", user: user, device: r.device) {
                results.append(["objectId": .int(id), "globalId": .string(a.globalId), "success": false,
                                "error": ["code": .int(Int64(Self.code(e))), "description": .string(e.message)]])
            } else {
                results.append(["objectId": .int(id), "globalId": .string(a.globalId), "success": true])
            }
        }
        return out(["deleteAttachmentResults": .array(results)], r)
    }
}
