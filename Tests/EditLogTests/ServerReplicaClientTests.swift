import EditLog
import Foundation
import Testing

/// Esri's `arcgis` 2.4.4 taking a served log offline through `FeatureLayerCollection.replicas`
/// (tools/arcgis-replica-client.py): create (JSON, with attachments, an area and a where), get_list, get, a
/// concurrent edit on the service by another user, synchronize with offline edits (an update of that tree, a new
/// tree with an inspection related to it, a delete, an attachment), a download-only synchronize, unregister, and a
/// synchronize after it refused. Then `editlog history`, `conflicts`, `replicas` and `verify` on the log.
@Suite("Feature service replicas with Esri's Python API", .serialized)
struct ServerReplicaClientTests {}

extension ServerReplicaClientTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test(.enabled(if: ServerArcGISClientTests.arcgis, "arcgis (PyPI) is not installed: Esri's Python API is not tried"))
        func esrisPythonAPITakesLayersOfflineSynchronizesAndUnregisters() throws {
            try exercise(try ServerClientTests.Served(maxRecordCount: 1000))
        }

        /// The same workflow against a node of a hub on PostgreSQL (`serve postgres://… --cache`).
        @Test(.enabled(if: ServerArcGISClientTests.arcgis && EngineUnderTest.postgresURL != nil,
                       "arcgis (PyPI) or a PostgreSQL test server is missing"))
        func esrisPythonAPIReplicaWorkflowOnAHubNode() async throws {
            try await PostgresScratch.withDatabase { location in
                try exercise(try ServerClientTests.Served(maxRecordCount: 1000, hub: PostgresScratch.url(location.database)))
            }
        }

        func exercise(_ served: ServerClientTests.Served) throws {
            // The replica is arcgis_user's; gdal_user edits the service meanwhile.
            let out = try served.runClient("arcgis-replica-client.py", token: "tok-arcgis-0002 tok-client-0001", marker: "REPLICA-RESULT")
            #expect(out["arcgis"] == "2.4.4")
            #expect(out["syncEnabled"] == true)
            let created = try #require(out["created"])
            let id = try #require(created["replicaID"]?.stringValue)
            #expect((created["counts"]?["0"]?.intValue ?? 0) > 0 && created["counts"]?["3"]?.intValue != nil, "\(created.serialized().prefix(400))")
            #expect(out["list"]?.arrayValue?.contains { $0["replicaID"]?.stringValue == id } == true)
            #expect(out["info"]?["replicaOwner"] == "arcgis_user")

            let synced = try #require(out["synced"])
            for layer in synced["editResults"]?.arrayValue ?? [] {
                for key in ["addResults", "updateResults", "deleteResults"] {
                    #expect(layer[key]?.arrayValue?.allSatisfy { $0["success"] == true } == true, "\(layer.serialized())")
                }
            }
            #expect(synced["editResults"]?.arrayValue?.count == 2, "\(synced.serialized().prefix(600))")

            // History: each offline edit as a session of the replica, by its user.
            let ids = try #require(out["ids"])
            for key in ["contested", "newTree", "newInspection", "deleted", "attachmentParent"] {
                let gid = try #require(ids[key]?.stringValue)
                let entries = try served.history(gid).filter { $0["cause"]?.stringValue == "replica:\(id)" || ($0["cause"] == "delete" && key == "deleted") }
                #expect(!entries.isEmpty, "\(key) \(gid)")
                #expect(entries.allSatisfy { $0["actor"] == "arcgis_user" }, "\(key): \(entries)")
            }
            let contested = try #require(ids["contested"]?.stringValue)
            #expect(try served.history(contested).contains { $0["field"] == "Condition" && $0["new"] == "Fair" && $0["cause"]?.stringValue == "replica:\(id)" })

            // Conflicts: what the replica overwrote, who wrote each side, the upload the winner.
            let conflicts = try served.cli(["conflicts", served.db, "list", "--json"])
            #expect(conflicts.status == 0, "\(conflicts.stderr)")
            let rows = conflicts.stdout.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
            let row = rows.first { $0["globalId"]?.stringValue == contested || $0["conflict"]?["globalId"]?.stringValue == contested }
            let c = row?["conflict"] ?? row
            #expect(c?["field"] == "Condition" && c?["winner"] == "remote", "\(conflicts.stdout.prefix(800))")
            #expect(c?["local"]?["value"] == "Poor" && c?["local"]?["writer"]?["actor"] == "gdal_user", "\(conflicts.stdout.prefix(800))")
            #expect(c?["remote"]?["value"] == "Fair" && c?["remote"]?["writer"]?["actor"] == "arcgis_user", "\(conflicts.stdout.prefix(800))")

            // The download-only synchronize got the service's later change, and only that.
            let downloadTree = try #require(out["downloadTree"]?.stringValue)
            let again = out["again"]?["edits"]?.arrayValue?.first { $0["id"] == 0 }
            #expect(again?["features"]?["updates"]?.arrayValue?.map { $0["attributes"]?["GlobalID"]?.stringValue } == [downloadTree], "\(out["again"]?.serialized().prefix(600) ?? "")")

            #expect(out["unregister"]?["success"] == true)
            #expect(out["afterUnregister"]?["refused"] == true, "\(out["afterUnregister"]?.serialized() ?? "")")
            #expect(out["listAfter"] == [])

            // editlog replicas: the auditor's view.
            let list = try served.cli(["replicas", served.db, "list", "--json"])
            let replicas = try JSONParser.parse(list.stdout).arrayValue ?? []
            #expect(replicas.count == 1)
            #expect(replicas.first?["user"] == "arcgis_user" && replicas.first?["closed"] == true && replicas.first?["closedBy"] == "unRegisterReplica")
            let syncs = replicas.first?["synchronizations"]?.arrayValue ?? []
            #expect(syncs.count == 2)
            #expect(syncs.first?["overwrote"]?.at(0)?["field"] == "Condition" && syncs.first?["overwrote"]?.at(0)?["serviceActor"] == "gdal_user")
            #expect(syncs.first?["uploaded"]?["adds"]?.arrayValue?.count == 2 && syncs.first?["uploaded"]?["deletes"]?.arrayValue?.count == 1)
            let show = try served.cli(["replicas", served.db, "show", id])
            #expect(show.status == 0 && show.stdout.contains("overwrote \(contested) Condition"), "\(show.stdout)\(show.stderr)")
            let verify = try served.cli(["verify", served.db])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        }
    }
}
