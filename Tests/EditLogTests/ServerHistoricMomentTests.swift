import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `historicMoment` (issue 56): every layer declares `archivingInfo`, and `query`, `queryAttachments`, attachment
/// lists and downloads answer from the log replayed to the moment (client clock), through the same query code.
@Suite("Feature service: historicMoment")
struct ServerHistoricMomentTests {
    static let base = ServedLog.base
    static let trees = try! Fixture.features("Trees")

    /// Client times of the edits `History.record` makes, and moments between them (epoch ms).
    enum At {
        static let edit = "2026-06-01T10:00:00Z", create = "2026-06-01T11:00:00Z", delete = "2026-06-01T12:00:00Z", attach = "2026-06-01T13:00:00Z"
        static func ms(_ s: String) -> Int64 { Timestamp.parse(s)! }
        /// After the baseline, before every edit.
        static let before = ms("2026-06-01T09:00:00Z")
        static let afterCreate = ms("2026-06-01T11:30:00Z")
        static let afterDelete = ms("2026-06-01T12:30:00Z")
        static let end = ms("2026-06-02T00:00:00Z")
    }

    /// One tree's Condition changed, a tree created, one deleted, one given an attachment, each at its client time.
    struct History {
        var edited: [String: JSONValue], deleted: [String: JSONValue], attachedTo: [String: JSONValue]
        var oldCondition: String, newCondition: String
        let created = newGID(56)

        init(_ log: EditLog) throws {
            edited = ServerHistoricMomentTests.trees[0]
            deleted = ServerHistoricMomentTests.trees[1]
            attachedTo = ServerHistoricMomentTests.trees[2]
            oldCondition = edited["Condition"]!.stringValue!
            newCondition = oldCondition == "Dead" ? "Good" : "Dead"
            try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(edited["GlobalID"]!.stringValue!)","at":"\#(At.edit)"}"#,
                        #"{"op":"set","field":"Condition","value":"\#(newCondition)"}"#, #"{"op":"finish"}"#)
            try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(created)","geometry":{"x":-122.65,"y":45.52},"attributes":{"Condition":"Good","DBH":1.5},"at":"\#(At.create)"}"#,
                        #"{"op":"finish"}"#)
            try log.run(#"{"op":"delete","layer":"Trees","globalId":"\#(deleted["GlobalID"]!.stringValue!)","at":"\#(At.delete)"}"#)
            try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(attachedTo["GlobalID"]!.stringValue!)","at":"\#(At.attach)"}"#,
                        #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-000000000056}","name":"bark.jpg","contentType":"image/jpeg","dataBase64":"AAECAwQ="}"#,
                        #"{"op":"finish"}"#)
        }
    }

    static func oids(_ r: ServiceResponse) -> [Int64] { r.json["features"]?.arrayValue?.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } ?? [] }

    static func query(_ client: any TestClientProtocol, _ form: [(String, String)], at ms: Int64?, layer: Int = 0) async throws -> ServiceResponse {
        try await client.getJSON(base + "/\(layer)/query" + queryString(form + (ms.map { [("historicMoment", String($0))] } ?? []) + [("f", "json")]))
    }

    @Test func everyLayerDeclaresArchivingInfoFromTheFirstEventOnTheClientClock() async throws {
        try await ServedLog.run { client, log in
            let start = try #require(try log.value.startMilliseconds(by: .client))
            for id in [0, 1, 2, 3] {
                let d = try await client.getJSON(Self.base + "/\(id)?f=json")
                #expect(d.json["archivingInfo"]?["supportsQueryWithHistoricMoment"] == true, "\(d.text.prefix(300))")
                #expect(d.json["archivingInfo"]?["startArchivingMoment"]?.intValue == start)
                #expect(d.json["isDataArchived"] == true)
                #expect(d.json["description"]?.stringValue?.contains("client clock") == true)
            }
            let all = try await client.getJSON(Self.base + "/layers?f=json")
            let every = (all.json["layers"]?.arrayValue ?? []) + (all.json["tables"]?.arrayValue ?? [])
            #expect(every.count == 4 && every.allSatisfy { $0["archivingInfo"]?["startArchivingMoment"]?.intValue == start })
        }
    }

    @Test func aQueryAtAMomentAnswersFromTheLogThen() async throws {
        try await ServedLog.run { client, log in
            let h = try History(log.value)
            let editedOid = h.edited["OBJECTID"]!.intValue!, deletedOid = h.deleted["OBJECTID"]!.intValue!
            let createdOid = try #require(try log.value.objectId(layer: "Trees", globalId: h.created)?.objectId)

            // Edited after the moment: its old value then, its new value now.
            let then = try await Self.query(client, [("objectIds", "\(editedOid)"), ("outFields", "Condition")], at: At.before)
            #expect(then.json["features"]?.at(0)?["attributes"]?["Condition"]?.stringValue == h.oldCondition, "\(then.text.prefix(300))")
            let now = try await Self.query(client, [("objectIds", "\(editedOid)"), ("outFields", "Condition")], at: nil)
            #expect(now.json["features"]?.at(0)?["attributes"]?["Condition"]?.stringValue == h.newCondition)
            let atEnd = try await Self.query(client, [("objectIds", "\(editedOid)"), ("outFields", "Condition")], at: At.end)
            #expect(atEnd.json["features"]?.at(0)?["attributes"]?["Condition"]?.stringValue == h.newCondition)

            // Created after the moment: absent then, present after its creation. Deleted after: present then, absent after.
            #expect(Self.oids(try await Self.query(client, [("objectIds", "\(createdOid)")], at: At.before)).isEmpty)
            #expect(Self.oids(try await Self.query(client, [("objectIds", "\(createdOid)")], at: At.afterCreate)) == [createdOid])
            #expect(Self.oids(try await Self.query(client, [("objectIds", "\(deletedOid)")], at: At.afterCreate)) == [deletedOid])
            #expect(Self.oids(try await Self.query(client, [("objectIds", "\(deletedOid)")], at: At.afterDelete)).isEmpty)

            // Counts, ids, where and geometry at the moment: the baseline's trees.
            let baselineOids = Self.trees.compactMap { $0["OBJECTID"]?.intValue }.sorted()
            let count = try await Self.query(client, [("where", "1=1"), ("returnCountOnly", "true")], at: At.before)
            #expect(count.json["count"]?.intValue == Int64(baselineOids.count), "\(count.text.prefix(300))")
            let ids = try await Self.query(client, [("where", "1=1"), ("returnIdsOnly", "true")], at: At.before)
            #expect(ids.json["objectIds"]?.arrayValue?.compactMap(\.intValue).sorted() == baselineOids)
            let idsAfter = try await Self.query(client, [("where", "1=1"), ("returnIdsOnly", "true")], at: At.afterDelete)
            #expect(idsAfter.json["objectIds"]?.arrayValue?.compactMap(\.intValue).sorted() == (baselineOids.filter { $0 != deletedOid } + [createdOid]).sorted())
            let condition = "Condition = '\(h.oldCondition)'"
            let matching = Self.trees.filter { $0["Condition"]?.stringValue == h.oldCondition }.compactMap { $0["OBJECTID"]?.intValue }.sorted()
            let byWhere = try await Self.query(client, [("where", condition), ("returnIdsOnly", "true")], at: At.before)
            #expect(byWhere.json["objectIds"]?.arrayValue?.compactMap(\.intValue).sorted() == matching)
            #expect(matching.contains(editedOid))
            let byWhereNow = try await Self.query(client, [("where", condition), ("returnIdsOnly", "true")], at: nil)
            #expect(byWhereNow.json["objectIds"]?.arrayValue?.compactMap(\.intValue).contains(editedOid) == false)
            let shape = try await Self.query(client, [("objectIds", "\(deletedOid)"), ("outFields", "*")], at: At.before)
            let geometry = try #require(shape.json["features"]?.at(0)?["geometry"])
            #expect(geometry["x"]?.doubleValue != nil && geometry["y"]?.doubleValue != nil, "\(shape.text.prefix(300))")
            #expect(shape.json["features"]?.at(0)?["attributes"]?["GlobalID"]?.stringValue == GlobalID.normalize(h.deleted["GlobalID"]!.stringValue!))
            #expect(shape.json["geometryType"] == "esriGeometryPoint")

            // Pagination through the moment: pages of 100 in ObjectID order make the whole list, the last one not exceeded.
            var paged: [Int64] = []
            for offset in stride(from: 0, to: baselineOids.count, by: 100) {
                let page = try await Self.query(client, [("where", "1=1"), ("orderByFields", "OBJECTID"), ("resultOffset", "\(offset)"), ("resultRecordCount", "100")], at: At.before)
                paged += Self.oids(page)
                #expect((page.json["exceededTransferLimit"] == true) == (offset + 100 < baselineOids.count), "offset \(offset)")
            }
            #expect(paged == baselineOids)

            // The same page read twice is the same (the second read is of the kept state).
            let again = try await Self.query(client, [("where", "1=1"), ("orderByFields", "OBJECTID"), ("resultRecordCount", "100")], at: At.before)
            #expect(Self.oids(again) == Array(baselineOids.prefix(100)))
        }
    }

    /// A replayed state assigns every feature the ObjectID the live projection gave it (a rebuild equals the
    /// incremental projection byte for byte): the whole service at the end is the live service, layer by layer.
    @Test func aMomentAfterTheLastEventIsTheLiveServiceObjectIdsIncluded() async throws {
        try await ServedLog.run { client, log in
            let h = try History(log.value)
            for layer in [0, 1, 2, 3] {
                let form = [("where", "1=1"), ("outFields", "*"), ("orderByFields", "OBJECTID")]
                let live = try await Self.query(client, form, at: nil, layer: layer)
                let replayed = try await Self.query(client, form, at: At.end, layer: layer)
                #expect(live.json["features"]?.arrayValue?.isEmpty == false)
                #expect(replayed.json == live.json, "layer \(layer): \(replayed.text.prefix(300))")
            }
            // The feature created by the log gets the same ObjectID in the replay as in the live projection.
            let live = try #require(try log.value.objectId(layer: "Trees", globalId: h.created)?.objectId)
            let then = try await Self.query(client, [("where", "GlobalID = '\(h.created)'"), ("returnIdsOnly", "true")], at: At.afterCreate)
            #expect(then.json["objectIds"]?.arrayValue?.compactMap(\.intValue) == [live], "\(then.text.prefix(300))")
        }
    }

    @Test func attachmentsAtAMoment() async throws {
        try await ServedLog.run { client, log in
            let h = try History(log.value)
            let oid = h.attachedTo["OBJECTID"]!.intValue!
            let gid = GlobalID.normalize(h.attachedTo["GlobalID"]!.stringValue!)!
            func groups(_ ms: Int64?) async throws -> [JSONValue] {
                let m = ms.map { "&historicMoment=\($0)" } ?? ""
                return try await client.getJSON(Self.base + "/0/queryAttachments?objectIds=\(oid)&f=json" + m).json["attachmentGroups"]?.arrayValue ?? []
            }
            #expect(try await groups(At.afterDelete).isEmpty)
            let now = try await groups(At.end)
            #expect(now.count == 1 && now.first?["parentGlobalId"]?.stringValue == gid)
            let info = try #require(now.first?["attachmentInfos"]?.at(0))
            #expect(info["name"] == "bark.jpg" && info["size"] == 5)
            #expect(try await groups(nil) == now)
            let id = try #require(info["id"]?.intValue)

            // The list and the bytes: none before the attach, the bytes after it.
            let listThen = try await client.getJSON(Self.base + "/0/\(oid)/attachments?f=json&historicMoment=\(At.afterDelete)")
            #expect(listThen.json["attachmentInfos"]?.arrayValue?.isEmpty == true, "\(listThen.text.prefix(300))")
            let missing = try await client.execute(uri: Self.base + "/0/\(oid)/attachments/\(id)?historicMoment=\(At.afterDelete)", method: .get) { $0.status }
            #expect(missing == .notFound)
            let bytes = try await client.execute(uri: Self.base + "/0/\(oid)/attachments/\(id)?historicMoment=\(At.end)", method: .get) { r in
                (r.status, Array(r.body.readableBytesView))
            }
            #expect(bytes.0 == .ok && bytes.1 == [0, 1, 2, 3, 4])

            // A tree deleted after the moment still has its feature then (its attachments list answers, empty).
            let deletedOid = h.deleted["OBJECTID"]!.intValue!
            let deletedThen = try await client.getJSON(Self.base + "/0/\(deletedOid)/attachments?f=json&historicMoment=\(At.before)")
            #expect(deletedThen.json["attachmentInfos"]?.arrayValue != nil, "\(deletedThen.text.prefix(300))")
            let deletedNow = try await client.getJSON(Self.base + "/0/\(deletedOid)/attachments?f=json&historicMoment=\(At.end)")
            #expect(deletedNow.json["error"]?["code"] == 404)
        }
    }

    @Test func aMomentBeforeTheStartIsArcGISsQueryError() async throws {
        try await ServedLog.run { client, log in
            let start = try #require(try log.value.startMilliseconds(by: .client))
            for path in ["/0/query?where=1%3D1", "/0/queryAttachments?objectIds=1", "/0/1/attachments?f=json", "/3/query?returnCountOnly=true"] {
                let r = try await client.getJSON(Self.base + path + "&f=json&historicMoment=\(start - 1)")
                #expect(r.status == .ok)
                #expect(r.json["error"]?["code"] == 400, "\(path): \(r.text.prefix(300))")
                #expect(r.json["error"]?["message"] == "Unable to perform query. Please check your parameters.")
                let detail = r.json["error"]?["details"]?.at(0)?.stringValue ?? ""
                #expect(detail.contains("before startArchivingMoment \(start)") && detail.contains("client clock"), "\(detail)")
            }
            let bad = try await client.getJSON(Self.base + "/0/query?where=1%3D1&f=json&historicMoment=yesterday")
            #expect(bad.json["error"]?["code"] == 400 && bad.json["error"]?["details"]?.at(0)?.stringValue?.contains("epoch milliseconds") == true)
            // The first event's own moment is the earliest one answered: the schema, no feature yet.
            let first = try await client.getJSON(Self.base + "/0/query?where=1%3D1&returnCountOnly=true&f=json&historicMoment=\(start)")
            #expect(first.json["count"] == 0, "\(first.text.prefix(300))")
        }
    }

    /// Moments are replayed from the log's checkpoints, and at most `historicMoments` replayed states are kept.
    @Test func momentsComeFromCheckpointsAndAFewAreKept() async throws {
        try await ServedLog.run(configure: { $0.historicMoments = 2 }) { client, log in
            let h = try History(log.value)
            _ = try log.value.createCheckpoints(every: 100)
            defer { try? FileManager.default.removeItem(atPath: log.value.path + ".checkpoints") }
            #expect(try !log.value.checkpoints().isEmpty)
            let folder = log.value.path + ".moments-\(getpid())"
            for ms in [At.before, At.afterCreate, At.afterDelete, At.end] {
                let r = try await Self.query(client, [("objectIds", "\(h.edited["OBJECTID"]!.intValue!)"), ("outFields", "Condition")], at: ms)
                #expect(r.json["features"]?.at(0)?["attributes"]?["Condition"]?.stringValue == (ms == At.before ? h.oldCondition : h.newCondition))
                let kept = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.filter { $0.hasSuffix(".sqlite") } ?? []
                #expect(kept.count <= 2, "\(kept)")
            }
        }
    }
}

extension ServerHistoricMomentTests {
    /// Esri's Python API (`FeatureLayer.query(where=…, historic_moment=…)`, tools/arcgis-historic-client.py) against a
    /// real `editlog serve` process. Skipped, with the reason, where arcgis is not installed.
    @Suite(.tags(.process)) struct ProcessTests {
        @Test(.enabled(if: ServerArcGISClientTests.arcgis, "arcgis (PyPI) is not installed: Esri's Python API is not tried"))
        func esrisPythonAPIQueriesAHistoricMoment() throws {
            let box = Unchecked(Box())
            let served = try ServerClientTests.Served(maxRecordCount: 50) { log in box.value.history = try History(log) }
            let h = try #require(box.value.history)
            let moments: JSONValue = ["before": .int(At.before), "after": .int(At.end), "editedOid": .int(h.edited["OBJECTID"]!.intValue!),
                                      "createdGlobalId": .string(h.created), "deletedOid": .int(h.deleted["OBJECTID"]!.intValue!)]
            try moments.serialized().write(toFile: served.dir + "/moments.json", atomically: true, encoding: .utf8)
            let out = try served.runClient("arcgis-historic-client.py", token: "tok-arcgis-0002", marker: "ARCGIS-HISTORIC")
            #expect(out["archivingInfo"]?["supportsQueryWithHistoricMoment"] == true)
            let baseline = Int64(ServerHistoricMomentTests.trees.count)
            // Before the edits: the baseline (arcgis paged it: 240 trees, maxRecordCount 50), the old Condition, the
            // deleted tree present and the created one absent.
            #expect(out["before"]?["count"]?.intValue == baseline && out["before"]?["distinct"]?.intValue == baseline, "\(out.serialized())")
            #expect(out["before"]?["countOnly"]?.intValue == baseline)
            #expect(out["before"]?["editedCondition"] == [.string(h.oldCondition)])
            #expect(out["before"]?["hasDeleted"] == true && out["before"]?["hasCreated"] == false)
            // After them, as live.
            #expect(out["after"]?["editedCondition"] == [.string(h.newCondition)])
            #expect(out["after"]?["hasDeleted"] == false && out["after"]?["hasCreated"] == true)
            #expect(out["after"] == out["live"])
            #expect(out["beforeStart"]?.stringValue?.contains("before startArchivingMoment") == true, "\(out["beforeStart"]?.serialized() ?? "nil")")
        }

        final class Box { var history: History? }
    }
}
