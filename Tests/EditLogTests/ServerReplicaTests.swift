import EditLog
@testable import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Replicas on `serve`: createReplica, synchronizeReplica (upload as sessions of cause `replica:<id>`, last-in wins
/// for replicas with each overwrite a conflict, download since the client's generation), unRegisterReplica, the
/// list and info, and every bad input the issue names answered with ArcGIS's error and nothing written.
@Suite("Feature service replicas")
struct ServerReplicaTests {
    static let base = ServedLog.base
    static let alice = ServedLog.editorToken, victor = ServedLog.viewerToken

    static func post(_ client: any TestClientProtocol, _ op: String, _ form: [(String, String)], token: String = alice) async throws -> ServiceResponse {
        try await client.postForm(base + "/" + op, form + [("f", "json"), ("token", token)], headers: [.userAgent: "ReplicaTest/1.0"])
    }

    /// The served trees, as a query reads them (attributes and geometry).
    static func served(_ log: EditLog) throws -> [JSONValue] { try log.queryFeatures(layer: "0", FeatureQuery()).features }

    /// The trees the area takes: live within `env` and not Dead.
    static func expectedTrees(_ log: EditLog, _ env: (Double, Double, Double, Double)) throws -> Set<String> {
        Set(try served(log).compactMap { f -> String? in
            guard let x = f["geometry"]?["x"]?.doubleValue, let y = f["geometry"]?["y"]?.doubleValue,
                  x >= env.0, x <= env.2, y >= env.1, y <= env.3, f["attributes"]?["Condition"]?.stringValue != "Dead" else { return nil }
            return f["attributes"]?["GlobalID"]?.stringValue
        })
    }

    /// An envelope around the first 40 served trees.
    static func envelope(_ log: EditLog) throws -> (Double, Double, Double, Double) {
        let pts = try served(log).prefix(40).compactMap { f -> (Double, Double)? in
            guard let x = f["geometry"]?["x"]?.doubleValue, let y = f["geometry"]?["y"]?.doubleValue else { return nil }
            return (x, y)
        }
        return (pts.map(\.0).min()! - 1e-7, pts.map(\.1).min()! - 1e-7, pts.map(\.0).max()! + 1e-7, pts.map(\.1).max()! + 1e-7)
    }

    static func create(_ client: any TestClientProtocol, _ log: EditLog, extra: [(String, String)] = [], token: String = alice) async throws -> JSONValue {
        let e = try envelope(log)
        let r = try await post(client, "createReplica", [
            ("replicaName", "crew-7"), ("layers", "[0,3]"), ("syncModel", "perReplica"), ("returnAttachments", "true"),
            ("layerQueries", #"{"0":{"where":"Condition <> 'Dead'","useGeometry":true,"queryOption":"useFilter"},"3":{"queryOption":"all"}}"#),
            ("geometry", #"{"xmin":\#(e.0),"ymin":\#(e.1),"xmax":\#(e.2),"ymax":\#(e.3),"spatialReference":{"wkid":4326}}"#),
            ("geometryType", "esriGeometryEnvelope"), ("inSR", "4326"),
        ] + extra, token: token)
        return r.json
    }

    @Test func aReplicaTakesItsAreaOfflineAndItsUploadWinsAsSessionsOfTheReplica() async throws {
        try await ServedLog.run { client, log in
            let created = try await Self.create(client, log.value)
            let id = try #require(created["replicaID"]?.stringValue, "\(created.serialized().prefix(500))")
            let gen = try #require(created["replicaServerGen"]?.intValue)
            #expect(gen == (try log.value.lastPosition()) - 1)  // the ReplicaCreated event is the one after it
            let layer0 = try #require(created["layers"]?.arrayValue?.first { $0["id"] == 0 })
            let got = Set(layer0["features"]?.arrayValue?.compactMap { $0["attributes"]?["GlobalID"]?.stringValue } ?? [])
            let expected = try Self.expectedTrees(log.value, try Self.envelope(log.value))
            #expect(got == expected && !got.isEmpty)
            #expect(created["layers"]?.arrayValue?.first { $0["id"] == 3 }?["features"]?.arrayValue?.count == (try Fixture.features("Inspections")).count)

            // Victor edits a tree the replica holds, on the service.
            let contested = try #require(got.sorted().first)
            let v = try await Self.post(client, "0/applyEdits", [("updates", #"[{"attributes":{"GlobalID":"\#(contested)","Condition":"Poor"}}]"#), ("useGlobalIds", "true")], token: Self.victor)
            #expect(v.json["updateResults"]?.at(0)?["success"] == true, "\(v.text)")

            // The replica's upload: the contested tree, a new tree with an inspection under it, a delete.
            let newTree = "{7E1B2C3D-0000-4000-8000-00000000E711}", newInspection = "{7E1B2C3D-0000-4000-8000-00000000E712}"
            let deleted = try #require(got.sorted().last)
            let edits = #"[{"id":0,"features":{"adds":[{"attributes":{"GlobalID":"\#(newTree)","Condition":"Good","DBH":4.5},"geometry":{"x":-122.6,"y":45.5}}],"updates":[{"attributes":{"GlobalID":"\#(contested)","Condition":"Fair"}}],"deleteIds":["\#(deleted)"]}},{"id":3,"features":{"adds":[{"attributes":{"GlobalID":"\#(newInspection)","TreeGlobalID":"\#(newTree)","Condition":"Good","DBH":4.6}}]}}]"#
            let s = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"),
                                                                       ("edits", edits), ("returnIdsForAdds", "true")])
            let next = try #require(s.json["replicaServerGen"]?.intValue, "\(s.text.prefix(800))")
            // The download: Victor's change, sent as the upload left it (the client keeps what won); not its own adds.
            let sent = s.json["edits"]?.arrayValue?.first { $0["id"] == 0 }
            #expect(sent?["features"]?["updates"]?.arrayValue?.map { $0["attributes"]?["Condition"] } == ["Fair"], "\(s.text.prefix(800))")
            #expect(sent?["features"]?["adds"]?.arrayValue?.isEmpty == true)
            #expect(s.json["editResults"]?.at(0)?["addResults"]?.at(0)?["success"] == true)

            // History names the replica and the user; conflicts list what it overwrote, the upload the winner.
            let history = try log.value.history(globalId: contested).entries
            let mine = history.filter { $0.field == "Condition" && $0.new == "Fair" && $0.cause.hasPrefix("replica:") }
            #expect(mine.count == 1 && mine.first?.actor == "alice_pdx" && mine.first?.cause == "replica:\(id)", "\(history.map(\.json))")
            // …and the decision that it overwrote Victor's value, as history shows a merge's.
            #expect(history.contains { $0.field == "Condition" && $0.cause.hasPrefix("merge:") })
            let conflicts = try log.value.conflicts().filter { $0.conflict.globalId == contested }
            #expect(conflicts.count == 1)
            #expect(conflicts.first?.conflict.local.value == "Poor" && conflicts.first?.conflict.local.writer?.actor == "victor")
            #expect(conflicts.first?.conflict.remote.value == "Fair" && conflicts.first?.conflict.remote.writer?.actor == "alice_pdx")
            #expect(conflicts.first?.conflict.winner == .remote)
            #expect(try log.value.history(globalId: newInspection).entries.contains { $0.cause == "replica:\(id)" })

            // The next synchronize sends nothing of its own upload back.
            let again = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(next)), ("syncDirection", "download")])
            #expect(again.json["edits"]?.arrayValue?.allSatisfy { ($0["features"]?["updates"]?.arrayValue ?? []).isEmpty && ($0["features"]?["adds"]?.arrayValue ?? []).isEmpty } == true,
                    "\(again.text.prefix(500))")

            // The record: every event of the log validates against its schema, the replica's included.
            let records = try ReplicaRecord.all(log.value.streamEvents(StreamName.replicas))
            #expect(records.count == 1 && records[0].syncs.count == 2 && records[0].user == "alice_pdx")
            // Each answer's generation is its own record's position: past its upload, where the next one starts.
            #expect(records[0].syncs.map(\.position) == [next, try #require(again.json["replicaServerGen"]?.intValue)])
            #expect(records[0].syncs[0].record.overwrote.first?["field"] == "Condition")
            let validator = SchemaFilesTests.validator()
            var checked = 0
            _ = try log.value.events(LogFilter()) { e in
                let errors = try validator.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
                #expect(errors.isEmpty, "event \(e.position) \(e.type): \(errors)")
                checked += 1
            }
            #expect(checked > 400)
            #expect(try log.value.digestOfProjections() == log.value.digestOfRebuild())
        }
    }

    @Test func badSynchronizesAreRefusedAndWriteNothing() async throws {
        try await ServedLog.run { client, log in
            let created = try await Self.create(client, log.value)
            let id = try #require(created["replicaID"]?.stringValue)
            let gen = try #require(created["replicaServerGen"]?.intValue)
            let tree = try #require(try Self.expectedTrees(log.value, try Self.envelope(log.value)).sorted().first)
            let head = try log.value.head()
            func sync(_ form: [(String, String)], token: String = Self.alice) async throws -> JSONValue {
                try await Self.post(client, "synchronizeReplica", [("syncDirection", "bidirectional")] + form, token: token).json
            }
            func expectRefused(_ r: JSONValue, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                #expect(r["error"] != nil, "\(r.serialized().prefix(300))", sourceLocation: sourceLocation)
                #expect(r.serialized().contains(text), "\(r.serialized().prefix(300))", sourceLocation: sourceLocation)
                #expect(try log.value.head() == head, sourceLocation: sourceLocation)
            }
            try expectRefused(try await sync([("replicaID", "{00000000-0000-4000-8000-000000000000}"), ("replicaServerGen", String(gen))]), "Replica does not exist")
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen))], token: Self.victor), "belongs to another user")
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen + 1000))]), "is from the future")
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen)), ("edits", #"[{"id":2,"features":{"updates":[]}}]"#)]), "is not in replica")
            // A GlobalID already here with other content; the same content is a retried upload and changes nothing.
            let attrs = try log.value.attributes(tree)
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen)),
                                              ("edits", #"[{"id":0,"features":{"adds":[{"attributes":{"GlobalID":"\#(tree)","Condition":"Splendid?"}}]}}]"#)]),
                              "already present with other content")
            // Half an upload fails (a value the domain refuses): with rollbackOnFailure nothing of it stays.
            let other = try #require(try Self.expectedTrees(log.value, try Self.envelope(log.value)).sorted().dropFirst().first)
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen)), ("rollbackOnFailure", "true"),
                                              ("edits", #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(other)","DBH":7}},{"attributes":{"GlobalID":"\#(tree)","Condition":"Splendid"}}]}}]"#)]),
                              "nothing was applied")
            try expectRefused(try await sync([("replicaID", id), ("replicaServerGen", String(gen)), ("dataFormat", "sqlite")]), "only json")
            let retry = try await sync([("replicaID", id), ("replicaServerGen", String(gen)),
                                        ("edits", #"[{"id":0,"features":{"adds":[{"attributes":{"GlobalID":"\#(tree)","Condition":"\#(attrs["Condition"]?.stringValue ?? "")"}}]}}]"#)])
            #expect(retry["error"] == nil, "\(retry.serialized().prefix(300))")
            #expect(try log.value.attributes(tree) == attrs)

            // Closed: by unRegisterReplica; then refused.
            let un = try await Self.post(client, "unRegisterReplica", [("replicaID", id)])
            #expect(un.json["success"] == true)
            let closedHead = try log.value.head()
            let closed = try await sync([("replicaID", id), ("replicaServerGen", String(gen))])
            #expect(closed.serialized().contains("was unregistered"), "\(closed.serialized())")
            #expect(try log.value.head() == closedHead)
            let list = try await client.getJSON(Self.base + "/replicas?f=json&token=\(Self.alice)")
            #expect(list.json == [])
            // Each replica record's body writes the bytes stored (one codec per event type).
            let seen = try EventCodecTests.expectEveryPayloadIsItsBodysBytes(log.value.path)
            #expect(seen.isSuperset(of: [.replicaCreated, .replicaSynchronized, .replicaUnregistered]), "\(seen)")
        }
    }

    /// Without rollbackOnFailure each edit stands alone: the one that fails is answered as failed and is not in the
    /// record of what the replica uploaded.
    @Test func withoutRollbackTheRecordListsOnlyWhatWasRecorded() async throws {
        try await ServedLog.run { client, log in
            let created = try await Self.create(client, log.value)
            let id = try #require(created["replicaID"]?.stringValue)
            let gen = try #require(created["replicaServerGen"]?.intValue)
            let picked = try Self.expectedTrees(log.value, try Self.envelope(log.value)).sorted()
            let good = picked[0], bad = picked[1]
            let edits = #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(good)","DBH":7}},{"attributes":{"GlobalID":"\#(bad)","Condition":"Splendid"}}]}}]"#
            let s = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("rollbackOnFailure", "false"), ("edits", edits)])
            let results = s.json["editResults"]?.at(0)?["updateResults"]?.arrayValue ?? []
            #expect(results.map { $0["success"] } == [true, false], "\(s.text.prefix(600))")
            let record = try #require(try ReplicaRecord.all(log.value.streamEvents(StreamName.replicas)).first?.syncs.first?.record.json)
            #expect(record["uploaded"]?["updates"]?.arrayValue?.compactMap { $0["globalId"]?.stringValue } == [good], "\(record.serialized())")
            #expect(try log.value.attributes(good)["DBH"]?.doubleValue == 7)
            #expect(try log.value.attributes(bad)["Condition"]?.stringValue != "Splendid")
        }
    }

    /// The download tests only the features the service changed since the client's generation against the
    /// replica's area and query: a change inside is sent, one outside the area or past the query is not, a delete is.
    /// The info still lists every synchronize (the synchronize itself reads only the replica's creation and close).
    @Test func aDownloadSendsOnlyTheChangesItsAreaAndQuerySelect() async throws {
        try await ServedLog.run { client, log in
            let created = try await Self.create(client, log.value)
            let id = try #require(created["replicaID"]?.stringValue)
            let gen = try #require(created["replicaServerGen"]?.intValue)
            let env = try Self.envelope(log.value)
            let inside = try Self.expectedTrees(log.value, env).sorted()
            let outside = try #require(try Self.served(log.value).compactMap { f -> String? in
                guard let x = f["geometry"]?["x"]?.doubleValue, let y = f["geometry"]?["y"]?.doubleValue,
                      x < env.0 || x > env.2 || y < env.1 || y > env.3, f["attributes"]?["Condition"]?.stringValue != "Dead" else { return nil }
                return f["attributes"]?["GlobalID"]?.stringValue
            }.first)
            let (kept, dead, gone) = (inside[0], inside[1], inside[2])
            func edit(_ form: [(String, String)]) async throws {
                let r = try await Self.post(client, "0/applyEdits", form + [("useGlobalIds", "true")], token: Self.victor)
                #expect(r.json["error"] == nil && !r.text.contains(#""success":false"#), "\(r.text.prefix(300))")
            }
            try await edit([("updates", #"[{"attributes":{"GlobalID":"\#(kept)","DBH":77.5}},{"attributes":{"GlobalID":"\#(outside)","DBH":78.5}},{"attributes":{"GlobalID":"\#(dead)","Condition":"Dead"}}]"#)])
            try await edit([("deletes", #"["\#(gone)"]"#)])
            var next = gen
            for round in 0..<3 {
                let s = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(next)), ("syncDirection", "download")])
                let trees = try #require(s.json["edits"]?.arrayValue?.first { $0["id"] == 0 }?["features"], "\(s.text.prefix(500))")
                let updates = trees["updates"]?.arrayValue?.compactMap { $0["attributes"]?["GlobalID"]?.stringValue } ?? []
                let deletes = trees["deleteIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
                // The first round gets the changes; the later ones, from the generation it answered, get nothing.
                #expect(updates == (round == 0 ? [kept] : []), "round \(round): \(s.text.prefix(500))")
                #expect(deletes == (round == 0 ? [gone] : []), "round \(round): \(s.text.prefix(500))")
                #expect(trees["adds"]?.arrayValue?.isEmpty == true)
                next = try #require(s.json["replicaServerGen"]?.intValue)
            }
            let info = try await client.getJSON(Self.base + "/replicas/\(id)?f=json&token=\(Self.alice)")
            #expect(info.json["history"]?["synchronizations"]?.arrayValue?.count == 3, "\(info.text.prefix(500))")
            #expect(info.json["replicaServerGen"]?.intValue == next)
        }
    }

    @Test func answersByURLAndAsJobsAreTheCallersOnlyAndCloseReplicaEndsIt() async throws {
        try await ServedLog.run { client, log in
            let byURL = try await Self.create(client, log.value, extra: [("transportType", "esriTransportTypeUrl")])
            let url = try #require(byURL["responseUrl"]?.stringValue, "\(byURL.serialized().prefix(300))")
            #expect(byURL["layers"] == nil)
            let path = String(url[url.range(of: "/arcgis/")!.lowerBound...])
            let data = try await client.getJSON(path + "?f=json&token=\(Self.alice)")
            #expect(data.json["layers"]?.arrayValue?.count == 2)
            #expect(try await client.getJSON(path + "?f=json&token=\(Self.victor)").status == .notFound)

            let job = try await Self.create(client, log.value, extra: [("async", "true")])
            let statusURL = try #require(job["statusUrl"]?.stringValue)
            let status = try await client.getJSON(String(statusURL[statusURL.range(of: "/arcgis/")!.lowerBound...]) + "?f=json&token=\(Self.alice)")
            #expect(status.json["status"] == "Completed")
            let result = try #require(status.json["resultUrl"]?.stringValue)
            let replica = try await client.getJSON(String(result[result.range(of: "/arcgis/")!.lowerBound...]) + "?f=json&token=\(Self.alice)")
            let id = try #require(replica.json["replicaID"]?.stringValue)

            // Info, then a synchronize that closes it; the snapshot sends the replica's features whole.
            let info = try await client.getJSON(Self.base + "/replicas/\(id)?f=json&token=\(Self.alice)")
            #expect(info.json["replicaOwner"] == "alice_pdx" && info.json["layers"] == [0, 3])
            let snap = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("syncDirection", "snapshot"), ("closeReplica", "true")])
            let snapTrees = snap.json["edits"]?.arrayValue?.first { $0["id"] == 0 }?["features"]?["adds"]?.arrayValue?.count
            let expected = try Self.expectedTrees(log.value, try Self.envelope(log.value))
            #expect(snapTrees == expected.count, "\(snap.text.prefix(300))")
            let after = try await Self.post(client, "synchronizeReplica", [("replicaID", id), ("syncDirection", "snapshot")])
            #expect(after.text.contains("closeReplica"), "\(after.text)")
        }
    }

    @Test func badCreatesAreRefusedAndWriteNothing() async throws {
        try await ServedLog.run { client, log in
            let head = try log.value.head()
            for (form, text) in [([("layers", "[0]"), ("dataFormat", "sqlite")], "only json"), ([("layers", "[9]")], "no layer or table 9"),
                                 ([("layers", "[0]"), ("geometry", "1,2,3")], "xmin,ymin,xmax,ymax"), ([("layers", "[0]"), ("geometry", "1,2,3,4"), ("inSR", "2154")], "inSR 2154"),
                                 ([("layers", "[0]"), ("layerQueries", #"{"0":{"where":"NoSuchField = 1"}}"#)], "NoSuchField"), ([("syncModel", "perReplica")], "layers is required")] {
                let r = try await Self.post(client, "createReplica", form)
                #expect(r.json["error"] != nil && r.text.contains(text), "\(form): \(r.text)")
            }
            let anonymous = try await client.postForm(Self.base + "/createReplica", [("layers", "[0]"), ("f", "json")])
            #expect(anonymous.json["error"]?["code"] == 499)
            #expect(try log.value.head() == head)
        }
    }

    @Test func anAreaInWebMercatorIsTheSameAreaInDegrees() throws {
        let base = try Fixture.json("baseline/Trees.json")["features"]?.arrayValue ?? []
        let e = (-122.66, 45.49, -122.55, 45.55)
        func merc(_ lon: Double, _ lat: Double) -> (Double, Double) {
            (lon * .pi / 180 * 6_378_137, log(tan(.pi / 4 + lat * .pi / 360)) * 6_378_137)
        }
        let a = merc(e.0, e.1), b = merc(e.2, e.3)
        let area = try ReplicaArea.parse(geometry: "\(a.0),\(a.1),\(b.0),\(b.1)", type: nil, inSR: "102100").area
        var inside = 0
        for f in base {
            guard let x = f["geometry"]?["x"]?.doubleValue, let y = f["geometry"]?["y"]?.doubleValue else { continue }
            let expected = x >= e.0 && x <= e.2 && y >= e.1 && y <= e.3
            #expect(area.contains(x, y) == expected, "\(x), \(y)")
            if expected { inside += 1 }
        }
        #expect(inside > 0 && inside < base.count)
        // A polygon (a triangle) holds what is inside it only.
        let triangle = try ReplicaArea.parse(geometry: #"{"rings":[[[0,0],[10,0],[0,10],[0,0]]]}"#, type: "esriGeometryPolygon", inSR: nil).area
        #expect(triangle.contains(1, 1) && !triangle.contains(6, 6))
    }
}
