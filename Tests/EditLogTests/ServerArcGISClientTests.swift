import EditLog
import Foundation
import Testing

/// Esri's own Python API (`arcgis` 2.4.4 from PyPI, pinned in .ci/run) against `editlog serve` on 127.0.0.1:
/// tools/arcgis-client.py queries (by `where`, which arcgis pages through objectIds batches of 200, and by
/// objectIds), edits with `edit_features` (multipart; adds, updates and deletes, with and without GlobalIDs,
/// a child under a parent added by GlobalID), adds, lists and deletes an attachment and reads the changes
/// with `FeatureLayerCollection.extract_changes`. Every edit shows in `editlog history` as the token's user.
/// Skipped, with the reason, where arcgis is not installed.
@Suite("Feature service with Esri's Python API", .serialized)
struct ServerArcGISClientTests {
    static let arcgis = ServerClientTests.pythonHas("arcgis")
}

extension ServerArcGISClientTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test(.enabled(if: arcgis, "arcgis (PyPI) is not installed: Esri's Python API is not tried"))
        func esrisPythonAPIQueriesEditsAttachesAndExtractsChanges() throws {
            // maxRecordCount 50 < 240 trees: arcgis must page (ids, then objectIds batches of 200).
            let served = try ServerClientTests.Served(maxRecordCount: 50)
            try exercise(served, token: "tok-arcgis-0002", actor: "arcgis_user")
        }

        /// The same, logged in with a name and a password: arcgis's `Connection(username, password, product SERVER)`
        /// posts to the token service /rest/info names and sends the token it got (bound to its Referer).
        @Test(.enabled(if: arcgis, "arcgis (PyPI) is not installed: Esri's Python API is not tried"))
        func esrisPythonAPILogsInWithANameAndAPasswordThenQueriesAndEdits() throws {
            let served = try ServerClientTests.Served(maxRecordCount: 50, users: ["esri_login"])
            let out = try exercise(served, token: "login:esri_login", actor: "esri_login")
            #expect(out["login"]?["auth"] == "EsriGenTokenAuth", "\(out["login"]?.serialized() ?? "nil")")
            #expect(out["login"]?["token"]?.stringValue?.hasPrefix("el1.") == true)
        }

        /// The same login and workflow against a node of a hub on PostgreSQL (`serve postgres://… --cache`).
        @Test(.enabled(if: arcgis && EngineUnderTest.postgresURL != nil, "arcgis (PyPI) or a PostgreSQL test server is missing"))
        func esrisPythonAPILogsInAndEditsOnAHubNode() async throws {
            try await PostgresScratch.withDatabase { location in
                let served = try ServerClientTests.Served(maxRecordCount: 50, users: ["esri_hub"], hub: PostgresScratch.url(location.database))
                let out = try exercise(served, token: "login:esri_hub", actor: "esri_hub")
                #expect(out["login"]?["token"]?.stringValue?.hasPrefix("el1.") == true)
            }
        }

        @discardableResult
        func exercise(_ served: ServerClientTests.Served, token: String, actor: String) throws -> JSONValue {
            let out = try served.runClient("arcgis-client.py", token: token, marker: "ARCGIS-RESULT")
            #expect(out["arcgis"] == "2.4.4")

            // Queries: every tree by where (paged by arcgis), by objectIds, a count by where.
            let trees = try Fixture.features("Trees")
            #expect(out["whereCount"] == 240)
            #expect(out["whereDistinct"] == 240)
            #expect(out["objectIdsCount"] == 240)
            let good = trees.filter { $0["Condition"] == "Good" }.count
            #expect(out["countOnly"]?.intValue == Int64(good))
            #expect(out["goodCount"]?.intValue == Int64(good))
            #expect(out["geometryType"] == "esriGeometryPoint")

            // edit_features: every result a success, in ArcGIS's shape.
            let edits = try #require(out["edits"]?.objectValue)
            for (name, key) in [("add", "addResults"), ("update", "updateResults"), ("delete", "deleteResults"), ("addGlobalId", "addResults"),
                                ("addChildGlobalId", "addResults"), ("updateGlobalId", "updateResults"), ("deleteGlobalId", "deleteResults")] {
                let result = edits[name]?[key]?.arrayValue?.first
                #expect(result?["success"] == true, "\(name): \(edits[name]?.serialized() ?? "nil")")
            }
            let treeGid = try #require(out["treeGlobalId"]?.stringValue)
            let inspectionGid = try #require(out["inspectionGlobalId"]?.stringValue)
            #expect(edits["addGlobalId"]?["addResults"]?.at(0)?["globalId"]?.stringValue == treeGid)
            let addedGid = try #require(edits["add"]?["addResults"]?.at(0)?["globalId"]?.stringValue)
            let addedOid = try #require(out["addedObjectId"]?.intValue)

            // Attachments: added, listed, deleted.
            let att = try #require(out["attachments"])
            #expect(att["add"]?["addAttachmentResult"]?["success"] == true, "\(att.serialized())")
            #expect(att["list"]?.arrayValue?.count == 1)
            #expect(att["list"]?.at(0)?["name"] == "bark.jpg")
            #expect(att["list"]?.at(0)?["size"] == 1030)
            // extract_changes with return_attachments while it was there: its URL, then its bytes.
            let byURL = att["changes"]?["edits"]?.at(0)?["attachments"]?["adds"]?.at(0)
            #expect(byURL?["name"] == "bark.jpg", "\(att["changes"]?.serialized() ?? "nil")")
            #expect(byURL?["parentObjectId"]?.intValue == addedOid)
            #expect(byURL?["url"]?.stringValue?.hasSuffix("/0/\(addedOid)/attachments/\(att["list"]?.at(0)?["id"]?.intValue ?? -1)") == true)
            let embedded = att["changesEmbedded"]?["edits"]?.at(0)?["attachments"]?["adds"]?.at(0)?["data"]?.stringValue
            #expect(embedded.flatMap { Data(base64Encoded: $0) }?.count == 1030, "\(att["changesEmbedded"]?.serialized() ?? "nil")")
            #expect(att["delete"]?["deleteAttachmentResults"]?.at(0)?["success"] == true, "\(att.serialized())")
            #expect(att["after"]?.arrayValue?.isEmpty == true)

            // extract_changes since the generation read before the edits.
            let layer0 = try #require(out["changes"]?["edits"]?.arrayValue?.first { $0["id"] == 0 }, "\(out["changes"]?.serialized() ?? "nil")")
            let adds = layer0["features"]?["adds"]?.arrayValue?.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } ?? []
            #expect(adds.contains(addedOid))
            #expect(layer0["features"]?["adds"]?.arrayValue?.contains { $0["attributes"]?["GlobalID"]?.stringValue == treeGid } == true)
            let updates = layer0["features"]?["updates"]?.arrayValue?.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } ?? []
            #expect(updates == [out["updatedObjectId"]?.intValue ?? -1])
            #expect(layer0["features"]?["deleteIds"]?.arrayValue?.compactMap(\.intValue) == [out["deletedObjectId"]?.intValue ?? -1])
            let idsOnly = try #require(out["changesIdsOnly"]?["edits"]?.at(0)?["objectIds"])
            #expect(idsOnly["adds"]?.arrayValue?.compactMap(\.intValue).contains(addedOid) == true)

            // editlog history: every edit the client made, as the token's user, with arcgis's User-Agent.
            let updatedGid = try #require(trees[0]["GlobalID"]?.stringValue)
            let deletedGid = try #require(trees[1]["GlobalID"]?.stringValue)
            for gid in [addedGid, treeGid, inspectionGid, updatedGid, deletedGid] {
                let entries = try served.history(gid)
                let sessions = entries.filter { $0["cause"] == "session" || $0["cause"] == "delete" }
                #expect(!sessions.isEmpty, "\(gid): \(entries)")
                #expect(sessions.allSatisfy { $0["actor"]?.stringValue == actor }, "\(gid): \(entries)")
                #expect(sessions.allSatisfy { $0["device"]?.stringValue?.hasPrefix("Geosaurus/") == true }, "\(gid): \(entries)")
            }
            #expect(try served.history(updatedGid).contains { $0["field"] == "Condition" && $0["new"] == "Poor" && $0["actor"]?.stringValue == actor })
            #expect(try served.history(treeGid).contains { $0["field"] == "DBH" && $0["new"] == 2.5 && $0["actor"]?.stringValue == actor })
            let attachmentEntries = try served.history(addedGid).filter { $0["field"]?.stringValue?.hasPrefix("@attachment") == true }
            #expect(attachmentEntries.count == 2, "\(attachmentEntries)")
            #expect(attachmentEntries.allSatisfy { $0["actor"]?.stringValue == actor })
            // Nobody else edited: every session in the log since the baseline is the token's user's.
            let sessions = try served.cli(["sessions", served.db, "--json"])
            let all = try JSONParser.parse(sessions.stdout).arrayValue ?? []
            #expect(!all.isEmpty && all.allSatisfy { $0["actor"]?.stringValue == actor }, "\(sessions.stdout.prefix(2000))")
            let verify = try served.cli(["verify", served.db])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            return out
        }
    }
}
