import EditLog
import Foundation
import Testing

/// bmi-arcgis-restapi 2.4.19 (`import restapi`, PyPI, pinned in .ci/run) against `editlog serve` on 127.0.0.1:
/// tools/restapi-client.py opens layer 0 with `FeatureLayer(url, token=T)` — restapi sends the token as the
/// `agstoken` cookie only — pages through it, then `addFeatures`, `updateFeatures`, `deleteFeatures` and
/// `addAttachment`. Every edit shows in `editlog history` as the token's user; a wrong token reaches restapi
/// as ArcGIS's 498. Skipped, with the reason, where restapi is not installed.
@Suite("Feature service with bmi-arcgis-restapi", .serialized)
struct ServerRestapiClientTests {
    static let restapi = ServerClientTests.pythonHas("restapi")
}

extension ServerRestapiClientTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test(.enabled(if: restapi, "bmi-arcgis-restapi (PyPI) is not installed: restapi is not tried"))
        func restapiPagesAndEditsWithItsAgstokenCookie() throws {
            // maxRecordCount 50 < 240 trees: restapi must page.
            let served = try ServerClientTests.Served(maxRecordCount: 50)
            try exercise(served, token: "tok-arcgis-0002", actor: "arcgis_user")
        }

        /// The same, logged in with a name and a password: `FeatureLayer(url, NAME, PASSWORD)`, restapi's
        /// `generate_token` (/rest/info, then a POST to its tokenServicesUrl with `client=requestip`).
        @Test(.enabled(if: restapi, "bmi-arcgis-restapi (PyPI) is not installed: restapi is not tried"))
        func restapiLogsInWithANameAndAPasswordThenPagesAndEdits() throws {
            let served = try ServerClientTests.Served(maxRecordCount: 50, users: ["restapi_login"])
            let out = try exercise(served, token: "login:restapi_login", actor: "restapi_login")
            let login = try #require(out["login"], "\(out.serialized().prefix(2000))")
            #expect(login["token"]?.stringValue?.hasPrefix("el1.") == true)
            #expect(login["requests"]?.arrayValue?.contains { $0.stringValue?.hasSuffix("/arcgis/tokens/generateToken") == true } == true, "\(login.serialized())")
        }

        /// The same login and workflow against a node of a hub on PostgreSQL (`serve postgres://… --cache`).
        @Test(.enabled(if: restapi && EngineUnderTest.postgresURL != nil, "bmi-arcgis-restapi (PyPI) or a PostgreSQL test server is missing"))
        func restapiLogsInAndEditsOnAHubNode() async throws {
            try await PostgresScratch.withDatabase { location in
                let served = try ServerClientTests.Served(maxRecordCount: 50, users: ["restapi_hub"], hub: PostgresScratch.url(location.database))
                let out = try exercise(served, token: "login:restapi_hub", actor: "restapi_hub")
                #expect(out["login"]?["token"]?.stringValue?.hasPrefix("el1.") == true)
            }
        }

        @discardableResult
        func exercise(_ served: ServerClientTests.Served, token: String, actor: String) throws -> JSONValue {
            let out = try served.runClient("restapi-client.py", token: token, marker: "RESTAPI-RESULT")
            #expect(out["restapi"] == "2.4.19")

            // The token went as the agstoken cookie on every request, never as a parameter (the wrong one too); a
            // login's own requests (/rest/info, generateToken) go before there is one.
            let requests = (out["requests"]?.arrayValue ?? []).filter {
                !($0["path"]?.stringValue?.hasSuffix("/generateToken") ?? false) && !($0["path"]?.stringValue?.hasSuffix("/rest/info") ?? false)
            }
            #expect(requests.count >= 10, "\(requests)")
            #expect(requests.allSatisfy { $0["agstoken"] == true && $0["tokenParameter"] == false }, "\(requests)")
            #expect(requests.allSatisfy { $0["status"] == 200 }, "\(requests)")

            // Paging: all 240 trees, in pages of 50.
            #expect(out["layerName"] == "Trees")
            #expect(out["pagedCount"] == 240)
            #expect(out["pagedDistinct"] == 240)
            #expect((out["queryRequests"]?.intValue ?? 0) >= 5, "\(out["queryRequests"]?.serialized() ?? "nil")")
            #expect(out["queryFormat"] == "geojson" || out["queryFormat"] == "json", "\(out["queryFormat"]?.serialized() ?? "nil")")

            // Edits: each a success in ArcGIS's shape.
            let edits = try #require(out["edits"]?.objectValue)
            for (name, key) in [("add", "addResults"), ("update", "updateResults"), ("delete", "deleteResults")] {
                #expect(edits[name]?[key]?.at(0)?["success"] == true, "\(name): \(edits[name]?.serialized() ?? "nil")")
            }
            #expect(edits["addAttachment"]?["addAttachmentResult"]?["success"] == true, "\(edits["addAttachment"]?.serialized() ?? "nil")")
            #expect(out["attachments"]?.at(0)?["name"] == "restapi-bark.jpg", "\(out["attachments"]?.serialized() ?? "nil")")
            #expect(out["attachments"]?.at(0)?["size"] == 518)

            // A wrong token: restapi raised its exception for ArcGIS's code 498 (read from a 200 answer).
            #expect(out["wrongToken"]?["refused"] == true)
            #expect(out["wrongToken"]?["code"] == 498, "\(out["wrongToken"]?.serialized() ?? "nil")")

            // editlog history: each edit as the token's user, with restapi's User-Agent as the device.
            let addedGid = try #require(edits["add"]?["addResults"]?.at(0)?["globalId"]?.stringValue)
            let trees = try Fixture.features("Trees")
            let updatedGid = try #require(trees[0]["GlobalID"]?.stringValue)
            let deletedGid = try #require(trees[1]["GlobalID"]?.stringValue)
            for gid in [addedGid, updatedGid, deletedGid] {
                let sessions = try served.history(gid).filter { $0["cause"] == "session" || $0["cause"] == "delete" }
                #expect(!sessions.isEmpty, "\(gid)")
                #expect(sessions.allSatisfy { $0["actor"]?.stringValue == actor }, "\(gid): \(sessions)")
                #expect(sessions.allSatisfy { $0["device"]?.stringValue?.hasPrefix("restapi/") == true }, "\(gid): \(sessions)")
            }
            #expect(try served.history(updatedGid).contains { $0["field"] == "Condition" && $0["new"] == "Poor" && $0["actor"]?.stringValue == actor })
            #expect(try served.history(deletedGid).contains { $0["cause"] == "delete" && $0["actor"]?.stringValue == actor })
            let attachment = try served.history(addedGid).filter { $0["field"]?.stringValue?.hasPrefix("@attachment") == true }
            #expect(attachment.count == 1 && attachment.allSatisfy { $0["actor"]?.stringValue == actor }, "\(attachment)")
            // Nobody else edited: the add, the update and the attachment are the log's sessions (a delete is not one).
            let sessions = try served.cli(["sessions", served.db, "--json"])
            let all = try JSONParser.parse(sessions.stdout).arrayValue ?? []
            #expect(all.count == 3 && all.allSatisfy { $0["actor"]?.stringValue == actor }, "\(sessions.stdout.prefix(2000))")
            let verify = try served.cli(["verify", served.db])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            return out
        }
    }
}
