import EditLog
@testable import EditLogServer
import EditLogStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Attachments and extractChanges of the feature service.
@Suite("Feature service attachments and changes")
struct ServerReadTests {
    static let base = ServedLog.base
    static let trees = try! Fixture.features("Trees")

    /// An attachment stored in chunks is sent piece by piece: the same bytes, with its length announced.
    @Test func aLargeAttachmentIsServedWhole() async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            let photo = BlobChunkTests.noise(Int(BlobStorage.inlineLimit) + 3 * BlobStorage.chunkBytes / 2, seed: 21)
            var cmds = try script([#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-big"}"#,
                                   #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000B1}","name":"scan.tif","contentType":"image/tiff","dataBase64":"AAEC"}"#,
                                   #"{"op":"finish"}"#])
            cmds[1].op = .attach(attachmentId: "{00000000-0000-4000-8000-0000000000B1}", name: "scan.tif", contentType: "image/tiff", data: photo, preferredSize: "actual")
            _ = try log.value.record(cmds, name: "big", sha256: Hex.encode(EventHash.sha256(photo)))
            let layout = try #require(try log.value.blobLayout(sha256: Hex.encode(EventHash.sha256(photo))))
            #expect(layout.size == Int64(photo.count) && layout.pieces == 6)
            let list = try await client.getJSON(Self.base + "/0/1/attachments?f=json")
            let id = try #require(list.json["attachmentInfos"]?.arrayValue?.first?["id"]?.intValue, "\(list.text)")
            let got = try await client.execute(uri: Self.base + "/0/1/attachments/\(id)", method: .get) { r in
                (r.status, Array(r.body.readableBytesView), r.headers[.contentLength])
            }
            #expect(got.0 == .ok && got.2 == String(photo.count))
            #expect(got.1 == photo)
        }
    }

    /// Stored bytes that are not the attachment's (a chunk changed, missing or longer, outside EditLog) never make a
    /// complete response: the transfer is cut short (the last piece is held back until the count and the SHA-256
    /// match), and nothing is written past the announced length.
    @Test(arguments: ["changed", "missing", "longer"])
    func aDamagedStoredAttachmentIsNeverServedAsComplete(damage: String) async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            let photo = BlobChunkTests.noise(Int(BlobStorage.inlineLimit) + BlobStorage.chunkBytes + 5, seed: 22)
            let sha = Hex.encode(EventHash.sha256(photo))
            var cmds = try script([#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-big"}"#,
                                   #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000B1}","name":"scan.tif","contentType":"image/tiff","dataBase64":"AAEC"}"#,
                                   #"{"op":"finish"}"#])
            cmds[1].op = .attach(attachmentId: "{00000000-0000-4000-8000-0000000000B1}", name: "scan.tif", contentType: "image/tiff", data: photo, preferredSize: "actual")
            _ = try log.value.record(cmds, name: "big", sha256: sha)
            let sql = switch damage {
            case "changed": "DROP TRIGGER blob_chunks_append_only_update; UPDATE blob_chunks SET data = CAST(x'00' || substr(data, 2) AS BLOB) WHERE sha256 = x'\(sha)' AND seq = 2"
            case "missing": "DROP TRIGGER blob_chunks_append_only_delete; DELETE FROM blob_chunks WHERE sha256 = x'\(sha)' AND seq = 5"
            default: "DROP TRIGGER blob_chunks_append_only_update; UPDATE blob_chunks SET data = CAST(data || x'0102' AS BLOB) WHERE sha256 = x'\(sha)' AND seq = 5"
            }
            try RawLog.writeWithoutTransaction(log.value.path) { db in try db.execute(sql: sql) }
            let list = try await client.getJSON(Self.base + "/0/1/attachments?f=json")
            let id = try #require(list.json["attachmentInfos"]?.arrayValue?.first?["id"]?.intValue, "\(list.text)")
            var received: [UInt8]?
            do {
                received = try await client.execute(uri: Self.base + "/0/1/attachments/\(id)", method: .get) { r in Array(r.body.readableBytesView) }
            } catch {
                received = nil  // the transfer failed: what a client must see
            }
            if let received {
                #expect(received.count < photo.count, "\(damage): \(received.count) bytes received as a complete response")
            }
        }
    }

    /// `extractChanges` embeds attachment bytes up to a bound; past it, the client is told to ask for URLs.
    @Test func extractChangesEmbedsAttachmentBytesUpToABound() async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            let gen = try log.value.lastPosition()
            let big = [UInt8](repeating: 7, count: Int(FeatureService.maxEmbeddedAttachmentBytes) + 1)
            var cmds = try script([#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-big"}"#,
                                   #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000B1}","name":"scan.tif","contentType":"image/tiff","dataBase64":"AAEC"}"#,
                                   #"{"op":"finish"}"#])
            cmds[1].op = .attach(attachmentId: "{00000000-0000-4000-8000-0000000000B1}", name: "scan.tif", contentType: "image/tiff", data: big, preferredSize: "actual")
            _ = try log.value.record(cmds, name: "big", sha256: Hex.encode(EventHash.sha256(big)))
            let q = [("layers", "[0]"), ("serverGens", "[\(gen)]"), ("returnAttachments", "true")]
            let embedded = try await client.getJSON(Self.base + "/extractChanges" + queryString(q + [("returnAttachmentsDataByUrl", "false")]))
            #expect(embedded.json["error"]?["code"] == 400, "\(embedded.text.prefix(300))")
            #expect(embedded.text.contains("returnAttachmentsDataByUrl=true"), "\(embedded.text.prefix(300))")
            let byURL = try await client.getJSON(Self.base + "/extractChanges" + queryString(q))
            let adds = byURL.json["edits"]?.arrayValue?.first?["attachments"]?["adds"]?.arrayValue ?? []
            #expect(adds.count == 1 && adds.first?["url"]?.stringValue != nil, "\(byURL.text.prefix(300))")
        }
    }

    @Test func attachmentsAreListedQueriedAndServed() async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            let photo: [UInt8] = Array("not really a jpeg \u{1}\u{2}".utf8)
            try log.value.run(#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-att"}"#,
                              #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000A1}","name":"crown.jpg","contentType":"image/jpeg","dataBase64":"\#(Data(photo).base64EncodedString())"}"#,
                              #"{"op":"finish"}"#)
            let list = try await client.getJSON(Self.base + "/0/1/attachments?f=json")
            let info = try #require(list.json["attachmentInfos"]?.arrayValue?.first, "\(list.text)")
            #expect(info["name"] == "crown.jpg")
            #expect(info["contentType"] == "image/jpeg")
            #expect(info["size"]?.intValue == Int64(photo.count))
            #expect(info["parentGlobalId"]?.stringValue == gid)
            let id = try #require(info["id"]?.intValue)
            let bytes = try await client.execute(uri: Self.base + "/0/1/attachments/\(id)", method: .get) { r in
                (r.status, Array(r.body.readableBytesView), r.headers[.contentType])
            }
            #expect(bytes.0 == .ok)
            #expect(bytes.1 == photo)
            #expect(bytes.2 == "image/jpeg")
            let wrongParent = try await client.getJSON(Self.base + "/0/2/attachments/\(id)")
            #expect(wrongParent.status == .notFound)
            let q = try await client.getJSON(Self.base + "/0/queryAttachments?objectIds=1,2&f=json")
            let groups = q.json["attachmentGroups"]?.arrayValue ?? []
            #expect(groups.count == 1)
            #expect(groups.first?["parentObjectId"] == 1)
            #expect(groups.first?["attachmentInfos"]?.arrayValue?.count == 1)
            let byWhere = try await client.getJSON(Self.base + "/0/queryAttachments" + queryString([("definitionExpression", "OBJECTID < 5")]))
            #expect(byWhere.json["attachmentGroups"]?.arrayValue?.count == 1)
            // By GlobalID, in any spelling; with a filter, both must hold; unknown ids select nothing.
            let other = try #require(try log.value.globalId(layer: "0", objectId: 2)?.globalId)
            let spelled = gid.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
            let byGid = try await client.getJSON(Self.base + "/0/queryAttachments" + queryString([("globalIds", "\(spelled),\(other)")]))
            #expect(byGid.json["attachmentGroups"]?.arrayValue?.map { $0["parentGlobalId"] } == [.string(gid)], "\(byGid.text.prefix(300))")
            let both = try await client.getJSON(Self.base + "/0/queryAttachments" + queryString([("globalIds", gid), ("definitionExpression", "OBJECTID > 1")]))
            #expect(both.json["attachmentGroups"]?.arrayValue?.count == 0, "\(both.text.prefix(300))")
            let none = try await client.getJSON(Self.base + "/0/queryAttachments" + queryString([("globalIds", "{00000000-0000-0000-0000-000000000000},not-an-id")]))
            #expect(none.json["attachmentGroups"]?.arrayValue?.count == 0, "\(none.text.prefix(300))")
            let noAttachments = try await client.getJSON(Self.base + "/1/1/attachments")
            #expect(noAttachments.json["error"]?["code"] == 400)
        }
    }

    @Test func extractChangesSinceAServerGen() async throws {
        try await ServedLog.run { client, log in
            let root = try await client.getJSON(Self.base)
            let gen = try #require(root.json["changeTrackingInfo"]?["layerServerGens"]?.arrayValue?.first?["serverGen"]?.intValue)
            let r = try await client.postForm(Self.base + "/0/applyEdits", [
                ("adds", #"[{"attributes":{"Condition":"Good"},"geometry":{"x":-122.6,"y":45.5}}]"#),
                ("updates", #"[{"attributes":{"OBJECTID":2,"Condition":"Poor"}}]"#), ("deletes", "3"), ("token", ServedLog.editorToken)])
            let added = try #require(r.json["addResults"]?.arrayValue?.first?["objectId"]?.intValue, "\(r.text)")
            let ids = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "[0]"), ("serverGens", "[\(gen)]"), ("returnIdsOnly", "true")]))
            let edit = try #require(ids.json["edits"]?.arrayValue?.first, "\(ids.text)")
            #expect(edit["objectIds"]?["adds"]?.arrayValue == [.int(added)])
            #expect(edit["objectIds"]?["updates"]?.arrayValue == [2])
            #expect(edit["objectIds"]?["deletes"]?.arrayValue == [3])
            let newGen = try #require(ids.json["layerServerGens"]?.arrayValue?.first?["serverGen"]?.intValue)
            #expect(newGen == (try log.value.lastPosition()))
            let full = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "0"), ("layerServerGens", #"[{"id":0,"serverGen":\#(gen)}]"#)]))
            let features = full.json["edits"]?.arrayValue?.first?["features"]
            #expect(features?["updates"]?.arrayValue?.first?["attributes"]?["Condition"] == "Poor")
            #expect(features?["deleteIds"]?.arrayValue == [3])
            #expect(features?["adds"]?.arrayValue?.count == 1)
            // The answer written straight to bytes (f=json) says what the one built as a document (f=pjson) says.
            let pretty = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "0"), ("serverGens", "[\(gen)]"), ("f", "pjson")]))
            let plain = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "0"), ("serverGens", "[\(gen)]"), ("f", "json")]))
            #expect(pretty.json["edits"] != nil && plain.json == pretty.json, "\(plain.text.prefix(400))\n\(pretty.text.prefix(400))")
            let none = try await client.getJSON(Self.base + "/extractChanges?layers=0&serverGens=\(newGen)&returnIdsOnly=true")
            #expect(none.json["edits"]?.arrayValue?.first?["objectIds"]?["adds"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func extractChangesReturnsTheWindowsAttachmentsByURLOrEmbedded() async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            let a1 = "{00000000-0000-4000-8000-0000000000B1}", a2 = "{00000000-0000-4000-8000-0000000000B2}"
            let a3 = "{00000000-0000-4000-8000-0000000000B3}", a4 = "{00000000-0000-4000-8000-0000000000B4}"
            func attach(_ id: String, _ name: String, _ bytes: [UInt8]) -> String {
                #"{"op":"attach","attachmentId":"\#(id)","name":"\#(name)","contentType":"image/jpeg","dataBase64":"\#(Data(bytes).base64EncodedString())"}"#
            }
            let photo: [UInt8] = Array("bark close-up \u{0}\u{1}\u{2}".utf8)
            // Before the window: two attachments, one to be renamed and one to be removed in it.
            try log.value.run(#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-before"}"#,
                              attach(a1, "old.jpg", [1, 2, 3]), attach(a2, "gone.jpg", [4, 5]), #"{"op":"finish"}"#)
            let gen = try log.value.lastPosition()
            try log.value.run(#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-window"}"#,
                              attach(a3, "crown.jpg", photo), #"{"op":"renameAttachment","attachmentId":"\#(a1)","name":"renamed.jpg"}"#,
                              #"{"op":"detach","attachmentId":"\#(a2)"}"#, attach(a4, "brief.jpg", [9]), #"{"op":"finish"}"#)
            try log.value.run(#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"s-window-2"}"#,
                              #"{"op":"detach","attachmentId":"\#(a4)"}"#, #"{"op":"finish"}"#)
            let root = try await client.getJSON(Self.base)
            #expect(root.json["extractChangesCapabilities"]?["supportsReturnAttachments"] == true)
            let byURL = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "[0]"), ("serverGens", "[\(gen)]"), ("returnAttachments", "true")]))
            let edit = try #require(byURL.json["edits"]?.arrayValue?.first, "\(byURL.text)")
            let atts = try #require(edit["attachments"], "\(byURL.text.prefix(600))")
            // a4 was added and removed inside the window: not there, as a feature created and deleted is not.
            #expect(atts["adds"]?.arrayValue?.map { $0["globalId"] } == [.string(a3)], "\(atts.serialized())")
            #expect(atts["updates"]?.arrayValue?.map { $0["name"] } == ["renamed.jpg"], "\(atts.serialized())")
            #expect(atts["deleteIds"]?.arrayValue == [.string(a2)], "\(atts.serialized())")
            let added = try #require(atts["adds"]?.arrayValue?.first)
            #expect(added["parentGlobalId"]?.stringValue == gid)
            #expect(added["parentObjectId"] == 1)
            #expect(added["size"]?.intValue == Int64(photo.count))
            #expect(added["data"] == nil)
            // The URL is this service's attachment resource and serves the bytes.
            let url = try #require(added["url"]?.stringValue)
            let path = try #require(URLComponents(string: url)?.path)
            #expect(url.hasPrefix("http://"), "\(url)")
            #expect(path.hasPrefix(Self.base + "/0/1/attachments/"), "\(url)")
            let served = try await client.execute(uri: path, method: .get) { r in Array(r.body.readableBytesView) }
            #expect(served == photo)
            // Embedded: the bytes in base64, no URL.
            let embedded = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "[0]"), ("serverGens", "[\(gen)]"),
                                                                                                  ("returnAttachments", "true"), ("returnAttachmentsDatabyURL", "false")]))
            let inline = try #require(embedded.json["edits"]?.arrayValue?.first?["attachments"]?["adds"]?.arrayValue?.first, "\(embedded.text.prefix(600))")
            #expect(inline["url"] == nil)
            #expect(inline["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) } == photo)
            // Without returnAttachments (the default) there is no attachments member.
            let plain = try await client.getJSON(Self.base + "/extractChanges" + queryString([("layers", "[0]"), ("serverGens", "[\(gen)]")]))
            #expect(plain.json["edits"]?.arrayValue?.first?["attachments"] == nil)
            #expect(plain.json["edits"]?.arrayValue?.first?["features"]?["updates"]?.arrayValue?.count == 1)
        }
    }

    @Test func relatedRecordsFollowTheKeysBothWays() async throws {
        try await ServedLog.run { client, _ in
            let (tree, inspections) = try Fixture.treeWithInspections()
            let treeOid = try #require(Self.trees.first { $0["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) == tree }?["OBJECTID"]?.intValue)
            let r = try await client.getJSON(Self.base + "/0/queryRelatedRecords" + queryString([("objectIds", "\(treeOid)"), ("relationshipId", "1"), ("outFields", "*")]))
            let group = try #require(r.json["relatedRecordGroups"]?.arrayValue?.first, "\(r.text)")
            #expect(group["objectId"]?.intValue == treeOid)
            let related = group["relatedRecords"]?.arrayValue?.compactMap { $0["attributes"]?["GlobalID"]?.stringValue } ?? []
            #expect(Set(related) == Set(inspections))
            let filtered = try await client.getJSON(Self.base + "/0/queryRelatedRecords" + queryString([("objectIds", "\(treeOid)"), ("relationshipId", "1"),
                                                                                                         ("definitionExpression", "1=0")]))
            #expect(filtered.json["relatedRecordGroups"]?.arrayValue?.isEmpty == true)
            // From an inspection back to its tree (destination to origin), with geometry.
            let inspectionOid = try #require(try Fixture.features("Inspections").first { $0["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) == inspections[0] }?["OBJECTID"]?.intValue)
            let back = try await client.getJSON(Self.base + "/3/queryRelatedRecords?objectIds=\(inspectionOid)&relationshipId=1&outFields=GlobalID")
            let treeRecord = back.json["relatedRecordGroups"]?.arrayValue?.first?["relatedRecords"]?.arrayValue?.first
            #expect(treeRecord?["attributes"]?["GlobalID"]?.stringValue == tree)
            #expect(treeRecord?["geometry"]?["x"] != nil)
            #expect(back.json["geometryType"] == "esriGeometryPoint")
            let bad = try await client.getJSON(Self.base + "/0/queryRelatedRecords?objectIds=1&relationshipId=9")
            #expect(bad.json["error"]?["code"] == 400)
        }
    }

    @Test func attachmentsAreAddedAndDeletedAsSessions() async throws {
        try await ServedLog.run { client, log in
            let boundary = "----editlog-attachment"
            let photo: [UInt8] = (0..<300).map { UInt8($0 % 256) }
            var body: [UInt8] = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\njson\r\n".utf8)
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"bark.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
            body += photo
            body += Array("\r\n--\(boundary)--\r\n".utf8)
            let headers: HTTPFields = [.contentType: "multipart/form-data; boundary=\(boundary)", .authorization: "Bearer \(ServedLog.editorToken)", .userAgent: "FieldMaps-Test"]
            let added = try await client.execute(uri: Self.base + "/0/4/addAttachment", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { r in
                try JSONParser.parse(Array(r.body.readableBytesView))
            }
            let result = try #require(added["addAttachmentResult"], "\(added.serialized())")
            #expect(result["success"] == true, "\(added.serialized())")
            let id = try #require(result["objectId"]?.intValue)
            let bytes = try await client.execute(uri: Self.base + "/0/4/attachments/\(id)", method: .get) { r in Array(r.body.readableBytesView) }
            #expect(bytes == photo)
            let gid = Self.trees[3]["GlobalID"]!.stringValue!
            let (_, history) = try log.value.history(globalId: gid)
            #expect(history.contains { $0.actor == "alice_pdx" && $0.device == "FieldMaps-Test" && $0.field.contains("bark.png") || ($0.actor == "alice_pdx" && $0.new.serialized().contains("bark.png")) },
                    "\(history.map { "\($0.field) \($0.new.serialized())" })")
            let anonymous = try await client.postForm(Self.base + "/0/4/deleteAttachments", [("attachmentIds", "\(id)")])
            #expect(anonymous.json["error"]?["code"] == 499, "\(anonymous.text)")
            let deleted = try await client.postForm(Self.base + "/0/4/deleteAttachments", [("attachmentIds", "\(id), 99999"), ("token", ServedLog.editorToken), ("f", "json")])
            #expect(deleted.json["deleteAttachmentResults"]?.arrayValue?.compactMap { $0["success"]?.boolValue } == [true, false], "\(deleted.text)")
            let list = try await client.getJSON(Self.base + "/0/4/attachments")
            #expect(list.json["attachmentInfos"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func updateAttachmentRenamesOrReplaces() async throws {
        try await ServedLog.run { client, log in
            let photo: [UInt8] = (0..<300).map { UInt8($0 % 256) }
            func multipart(_ path: String, _ filename: String, _ bytes: [UInt8], fields: [(String, String)]) async throws -> JSONValue {
                let boundary = "----editlog-update"
                var body: [UInt8] = []
                for (k, v) in fields { body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(k)\"\r\n\r\n\(v)\r\n".utf8) }
                body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"\(filename)\"\r\nContent-Type: image/png\r\n\r\n".utf8)
                body += bytes
                body += Array("\r\n--\(boundary)--\r\n".utf8)
                let headers: HTTPFields = [.contentType: "multipart/form-data; boundary=\(boundary)", .authorization: "Bearer \(ServedLog.editorToken)"]
                return try await client.execute(uri: Self.base + path, method: .post, headers: headers, body: ByteBuffer(bytes: body)) { r in
                    try JSONParser.parse(Array(r.body.readableBytesView))
                }
            }
            let added = try await multipart("/0/4/addAttachment", "bark.png", photo, fields: [("f", "json")])
            let id = try #require(added["addAttachmentResult"]?["objectId"]?.intValue, "\(added.serialized())")
            let gid = try #require(added["addAttachmentResult"]?["globalId"]?.stringValue.flatMap(GlobalID.normalize))
            // Same bytes, new file name: renamed in place.
            let renamed = try await multipart("/0/4/updateAttachment", "bark-west.png", photo, fields: [("attachmentId", "\(id)"), ("f", "json")])
            #expect(renamed["updateAttachmentResult"]?["success"] == true, "\(renamed.serialized())")
            #expect(renamed["updateAttachmentResult"]?["objectId"]?.intValue == id)
            #expect(try log.value.attachmentInfo(globalId: gid)?.name == "bark-west.png")
            // New bytes: a new attachment in its place; the answer names it and it serves the new bytes.
            let second: [UInt8] = Array("second".utf8)
            let replaced = try await multipart("/0/4/updateAttachment", "bark-west.png", second, fields: [("attachmentId", "\(id)"), ("f", "json")])
            let newId = try #require(replaced["updateAttachmentResult"]?["objectId"]?.intValue, "\(replaced.serialized())")
            #expect(newId != id)
            let bytes = try await client.execute(uri: Self.base + "/0/4/attachments/\(newId)", method: .get) { r in Array(r.body.readableBytesView) }
            #expect(bytes == second)
            let list = try await client.getJSON(Self.base + "/0/4/attachments")
            #expect(list.json["attachmentInfos"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [newId])
            // The old id is gone: not found, nothing written.
            let count = try log.value.eventCount()
            let missing = try await multipart("/0/4/updateAttachment", "x.png", second, fields: [("attachmentId", "\(id)"), ("f", "json")])
            #expect(missing["updateAttachmentResult"]?["success"] == false, "\(missing.serialized())")
            #expect(try log.value.eventCount() == count)
        }
    }
}
