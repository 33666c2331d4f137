import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The service-level `FeatureServer/applyEdits` (`edits=[{id, adds, updates, deletes, attachments}]`) and
/// attachments inside `applyEdits`, as `editlog sync` pushes: `useGlobalIds=true`, `rollbackOnFailure=true`,
/// parents before children, attachments with their GlobalIDs.
@Suite("Feature service: service-level applyEdits")
struct ServerServiceEditsTests {
    static let base = ServedLog.base
    static let agent: HTTPFields = [.userAgent: "EditLogSync-Test/1.0"]
    static let trees = try! Fixture.features("Trees")

    func post(_ client: any TestClientProtocol, _ path: String, _ form: [(String, String)], token: String? = ServedLog.editorToken) async throws -> ServiceResponse {
        var f = form + [("f", "json")]
        if let token { f.append(("token", token)) }
        return try await client.postForm(Self.base + path, f, headers: Self.agent)
    }

    static let tree = "{7B2C0000-0000-4000-8000-0000000000A1}"
    static let inspection = "{7B2C0000-0000-4000-8000-0000000000B1}"
    static let photo = "{7B2C0000-0000-4000-8000-0000000000C1}"
    static let photoBytes: [UInt8] = Array("not really a jpeg, but bytes all the same".utf8)

    /// A new tree, an inspection under it and a photo of it, parents first.
    static func parentChildAndAttachment(inspectionCondition: String = "Fair") -> String {
        let data = Data(photoBytes).base64EncodedString()
        return """
            [{"id":0,"adds":[{"attributes":{"GlobalID":"\(tree)","Condition":"Good","DBH":3},"geometry":{"x":-122.62,"y":45.52}}],
              "attachments":{"adds":[{"globalId":"\(photo)","parentGlobalId":"\(tree)","name":"bark.jpg","contentType":"image/jpeg","data":"\(data)"}]}},
             {"id":3,"adds":[{"attributes":{"GlobalID":"\(inspection)","TreeGlobalID":"\(tree)","Condition":"\(inspectionCondition)","DBH":3.1}}]}]
            """
    }

    @Test func parentsChildrenAndAttachmentsInOneRequest() async throws {
        try await ServedLog.run { client, log in
            let r = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment()), ("useGlobalIds", "true"),
                                                          ("rollbackOnFailure", "true"), ("returnEditMoment", "true")])
            let layers = try #require(r.json.arrayValue, "\(r.text)")
            #expect(layers.map { $0["id"] } == [0, 3])
            let trees = layers[0], inspections = layers[1]
            // The real service's per-layer shape.
            for l in layers {
                #expect(l["addResults"]?.arrayValue != nil && l["updateResults"]?.arrayValue != nil && l["deleteResults"]?.arrayValue != nil, "\(l.serialized())")
                #expect(l["editMoment"]?.intValue != nil)
            }
            let add = try #require(trees["addResults"]?.at(0))
            #expect(add["success"] == true, "\(r.text)")
            #expect(add["globalId"]?.stringValue == Self.tree)
            let oid = try #require(add["objectId"]?.intValue)
            #expect(oid > 240)
            let photo = try #require(trees["attachments"]?["addResults"]?.at(0))
            #expect(photo["success"] == true, "\(r.text)")
            #expect(photo["globalId"]?.stringValue == Self.photo)
            #expect(photo["objectId"]?.intValue != nil)
            #expect(inspections["addResults"]?.at(0)?["success"] == true, "\(r.text)")
            #expect(inspections["attachments"] == nil)

            // In the log: the inspection under the tree, the photo's bytes, all as the token's user.
            #expect(try log.value.attributes(Self.inspection)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == Self.tree)
            let infos = try log.value.attachmentInfos(parents: [Self.tree])[Self.tree] ?? []
            #expect(infos.map(\.globalId) == [Self.photo])
            #expect(infos.first.flatMap { try? log.value.blob(sha256: $0.sha256) } == Self.photoBytes)
            for gid in [Self.tree, Self.inspection] {
                let (_, entries) = try log.value.history(globalId: gid)
                #expect(!entries.isEmpty && entries.filter { $0.cause == "session" }.allSatisfy { $0.actor == "alice_pdx" && $0.device == "EditLogSync-Test/1.0" })
            }
            // The bytes are served.
            let bytes = try await client.execute(uri: Self.base + "/0/\(oid)/attachments/\(photo["objectId"]!.intValue!)", method: .get) { Array($0.body.readableBytesView) }
            #expect(bytes == Self.photoBytes)

            // The same request again: the GlobalIDs exist, so everything fails and rolls back; nothing is written.
            let before = try log.value.eventCount()
            let again = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment()), ("useGlobalIds", "true")])
            #expect(again.json.at(0)?["addResults"]?.at(0)?["success"] == false, "\(again.text)")
            #expect(try log.value.eventCount() == before)

            // Updates and deletes by GlobalID across layers, then the attachment deleted by its GlobalID.
            let edits = """
                [{"id":3,"deletes":["\(Self.inspection)"]},
                 {"id":0,"updates":[{"attributes":{"GlobalID":"\(Self.tree)","Condition":"Poor"}}],"attachments":{"deletes":["\(Self.photo)"]}}]
                """
            let u = try await post(client, "/applyEdits", [("edits", edits), ("useGlobalIds", "true")])
            #expect(u.json.at(0)?["id"] == 3 && u.json.at(0)?["deleteResults"]?.at(0)?["success"] == true, "\(u.text)")
            #expect(u.json.at(1)?["updateResults"]?.at(0)?["success"] == true, "\(u.text)")
            #expect(u.json.at(1)?["attachments"]?["deleteResults"]?.at(0)?["success"] == true, "\(u.text)")
            #expect(u.json.at(1)?["attachments"]?["deleteResults"]?.at(0)?["globalId"]?.stringValue == Self.photo)
            #expect(try log.value.show(globalId: Self.inspection)["deleted"] == true)
            #expect(try log.value.attributes(Self.tree)["Condition"] == "Poor")
            #expect(try log.value.attachmentInfos(parents: [Self.tree])[Self.tree]?.isEmpty ?? true)
            #expect(try log.value.verify().ok)
        }
    }

    @Test func attachmentUpdatesRenameOrReplace() async throws {
        try await ServedLog.run { client, log in
            let r = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment()), ("useGlobalIds", "true")])
            #expect(r.json.at(0)?["attachments"]?["addResults"]?.at(0)?["success"] == true, "\(r.text)")
            let id = try #require(try log.value.attachmentInfo(globalId: Self.photo)?.id)
            // The same bytes under another name: a rename, same GlobalID and id.
            let data = Data(Self.photoBytes).base64EncodedString()
            let rename = """
                [{"id":0,"attachments":{"updates":[{"globalId":"\(Self.photo)","name":"bark-north.jpg","contentType":"image/jpeg","data":"\(data)"}]}}]
                """
            let u = try await post(client, "/applyEdits", [("edits", rename), ("useGlobalIds", "true")])
            let renamed = try #require(u.json.at(0)?["attachments"]?["updateResults"]?.at(0), "\(u.text)")
            #expect(renamed["success"] == true && renamed["globalId"]?.stringValue == Self.photo && renamed["objectId"]?.intValue == id, "\(u.text)")
            #expect(try log.value.attachmentInfo(globalId: Self.photo)?.name == "bark-north.jpg")
            // Sent again: nothing changes, nothing is written.
            let before = try log.value.eventCount()
            let again = try await post(client, "/applyEdits", [("edits", rename), ("useGlobalIds", "true")])
            #expect(again.json.at(0)?["attachments"]?["updateResults"]?.at(0)?["success"] == true, "\(again.text)")
            #expect(try log.value.eventCount() == before)
            // Other bytes: the photo is replaced under a new GlobalID; the old one is detached, its bytes kept.
            let newBytes: [UInt8] = Array("a second photo".utf8)
            let replace = """
                [{"id":0,"attachments":{"updates":[{"globalId":"\(Self.photo)","data":"\(Data(newBytes).base64EncodedString())"}]}}]
                """
            let x = try await post(client, "/applyEdits", [("edits", replace), ("useGlobalIds", "true")])
            let replaced = try #require(x.json.at(0)?["attachments"]?["updateResults"]?.at(0), "\(x.text)")
            #expect(replaced["success"] == true, "\(x.text)")
            let newGid = try #require(replaced["globalId"]?.stringValue)
            #expect(newGid != Self.photo)
            let infos = try log.value.attachmentInfos(parents: [Self.tree])[Self.tree] ?? []
            #expect(infos.map(\.globalId) == [newGid])
            #expect(infos.first?.name == "bark-north.jpg" && infos.first?.contentType == "image/jpeg")
            #expect(replaced["objectId"]?.intValue == infos.first?.id)
            #expect(infos.first.flatMap { try? log.value.blob(sha256: $0.sha256) } == newBytes)
            // A new content type without the bytes is refused, naming what is missing.
            let typeOnly = """
                [{"id":0,"attachments":{"updates":[{"globalId":"\(newGid)","contentType":"image/png"}]}}]
                """
            let t = try await post(client, "/applyEdits", [("edits", typeOnly), ("useGlobalIds", "true")])
            let refused = try #require(t.json.at(0)?["attachments"]?["updateResults"]?.at(0), "\(t.text)")
            #expect(refused["success"] == false && refused["error"]?["description"]?.stringValue?.contains("data") == true, "\(t.text)")
            // An unknown attachment is refused and, with rollbackOnFailure, nothing is written.
            let count = try log.value.eventCount()
            let unknown = """
                [{"id":0,"attachments":{"updates":[{"globalId":"{7B2C0000-0000-4000-8000-0000000000CF}","name":"x.jpg"}]}}]
                """
            let n = try await post(client, "/applyEdits", [("edits", unknown), ("useGlobalIds", "true")])
            #expect(n.json.at(0)?["attachments"]?["updateResults"]?.at(0)?["success"] == false, "\(n.text)")
            #expect(try log.value.eventCount() == count)
            #expect(try log.value.verify().ok)
        }
    }

    @Test func rollbackOnFailureWritesNothingInAnyLayer() async throws {
        try await ServedLog.run { client, log in
            let before = try log.value.eventCount()
            // The tree and its photo are fine; the inspection's Condition is outside its domain.
            let r = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment(inspectionCondition: "Splendid")),
                                                          ("useGlobalIds", "true"), ("rollbackOnFailure", "true")])
            let layers = try #require(r.json.arrayValue, "\(r.text)")
            #expect(layers[0]["addResults"]?.at(0)?["success"] == false)
            #expect(layers[0]["addResults"]?.at(0)?["error"]?["code"] == 1003)
            #expect(layers[0]["attachments"]?["addResults"]?.at(0)?["error"]?["code"] == 1003)
            let failed = try #require(layers[1]["addResults"]?.at(0))
            #expect(failed["success"] == false)
            #expect(failed["error"]?["code"] == 1000)
            #expect(failed["error"]?["description"]?.stringValue?.contains("Condition") == true, "\(r.text)")
            #expect(try log.value.eventCount() == before)
            #expect(try log.value.objectId(layer: "0", globalId: Self.tree) == nil)

            // rollbackOnFailure=false: each edit on its own; the tree and its photo are recorded.
            let partial = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment(inspectionCondition: "Splendid")),
                                                                ("useGlobalIds", "true"), ("rollbackOnFailure", "false")])
            #expect(partial.json.at(0)?["addResults"]?.at(0)?["success"] == true, "\(partial.text)")
            #expect(partial.json.at(0)?["attachments"]?["addResults"]?.at(0)?["success"] == true, "\(partial.text)")
            #expect(partial.json.at(1)?["addResults"]?.at(0)?["success"] == false)
            #expect(try log.value.objectId(layer: "0", globalId: Self.tree) != nil)
            #expect(try log.value.objectId(layer: "3", globalId: Self.inspection) == nil)
        }
    }

    @Test func perLayerResultsByObjectId() async throws {
        try await ServedLog.run { client, log in
            let edits = #"[{"id":0,"updates":[{"attributes":{"OBJECTID":1,"Condition":"Dead"}}],"deletes":[3,4]},{"id":2,"adds":[{"attributes":{"CommonName":"Test oak"}}]}]"#
            let r = try await post(client, "/applyEdits", [("edits", edits)])
            let layers = try #require(r.json.arrayValue, "\(r.text)")
            #expect(layers.count == 2)
            #expect(layers[0]["updateResults"]?.at(0)?["objectId"] == 1)
            #expect(layers[0]["updateResults"]?.at(0)?["success"] == true, "\(r.text)")
            #expect(layers[0]["deleteResults"]?.arrayValue?.compactMap { $0["objectId"]?.intValue } == [3, 4])
            #expect(layers[0]["addResults"]?.arrayValue?.isEmpty == true)
            #expect(layers[0]["editMoment"] == nil)
            #expect(layers[1]["id"] == 2)
            #expect(layers[1]["addResults"]?.at(0)?["success"] == true, "\(r.text)")
            #expect(try log.value.attributes(Self.trees[0]["GlobalID"]!.stringValue!)["Condition"] == "Dead")
            #expect(try log.value.sessions(actor: "alice_pdx").count == 2)
        }
    }

    @Test func badRequestsAreArcGISErrorsAndWriteNothing() async throws {
        try await ServedLog.run { client, log in
            let before = try log.value.eventCount()
            let unknown = try await post(client, "/applyEdits", [("edits", #"[{"id":42,"deletes":[1]}]"#)])
            #expect(unknown.json["error"]?["code"] == 400)
            #expect(unknown.json["error"]?["details"]?.at(0)?.stringValue?.contains("42") == true, "\(unknown.text)")
            let notJSON = try await post(client, "/applyEdits", [("edits", "[{")])
            #expect(notJSON.json["error"]?["code"] == 400)
            let missing = try await post(client, "/applyEdits", [])
            #expect(missing.json["error"]?["code"] == 400)
            let anonymous = try await post(client, "/applyEdits", [("edits", #"[{"id":0,"deletes":[1]}]"#)], token: nil)
            #expect(anonymous.json["error"]?["code"] == 499, "\(anonymous.text)")
            // Attachments need useGlobalIds; uploadId and attachment updates are refused per item.
            let noGlobalIds = try await post(client, "/applyEdits", [("edits", Self.parentChildAndAttachment())])
            #expect(noGlobalIds.json.at(0)?["attachments"]?["addResults"]?.at(0)?["error"]?["description"]?.stringValue?.contains("useGlobalIds") == true, "\(noGlobalIds.text)")
            let upload = #"[{"id":0,"attachments":{"adds":[{"globalId":"{7B2C0000-0000-4000-8000-0000000000C9}","parentGlobalId":"\#(Self.trees[0]["GlobalID"]!.stringValue!)","uploadId":"{00000000-0000-4000-8000-000000000001}"}],"updates":[{"globalId":"{7B2C0000-0000-4000-8000-0000000000C8}"}]}}]"#
            let u = try await post(client, "/applyEdits", [("edits", upload), ("useGlobalIds", "true"), ("rollbackOnFailure", "false")])
            #expect(u.json.at(0)?["attachments"]?["addResults"]?.at(0)?["error"]?["description"]?.stringValue?.contains("uploadId") == true, "\(u.text)")
            #expect(u.json.at(0)?["attachments"]?["updateResults"]?.at(0)?["success"] == false, "\(u.text)")
            #expect(try log.value.eventCount() == before)
        }
    }

    /// Layer-level applyEdits takes the same `attachments` parameter.
    @Test func layerLevelAttachmentsByGlobalId() async throws {
        try await ServedLog.run { client, log in
            let parent = Self.trees[0]["GlobalID"]!.stringValue!
            let data = Data(Self.photoBytes).base64EncodedString()
            let attachments = #"{"adds":[{"globalId":"\#(Self.photo)","parentGlobalId":"\#(parent)","name":"a.txt","contentType":"text/plain","data":"\#(data)"}]}"#
            let r = try await post(client, "/0/applyEdits", [("attachments", attachments), ("useGlobalIds", "true")])
            #expect(r.json["attachments"]?["addResults"]?.at(0)?["success"] == true, "\(r.text)")
            #expect(r.json["addResults"]?.arrayValue?.isEmpty == true)
            let g = try #require(GlobalID.normalize(parent))
            #expect(try log.value.attachmentInfos(parents: [g])[g]?.map(\.name) == ["a.txt"])
            let d = try await post(client, "/0/applyEdits", [("attachments", #"{"deletes":["\#(Self.photo)"]}"#), ("useGlobalIds", "true")])
            #expect(d.json["attachments"]?["deleteResults"]?.at(0)?["success"] == true, "\(d.text)")
            #expect(try log.value.attachmentInfos(parents: [g])[g]?.isEmpty ?? true)
        }
    }
}
