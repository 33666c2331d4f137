import EditLog
import EditLogServer
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing

/// `editlog serve`: the feature service in process (HummingbirdTesting's router client) over the Trees of
/// Portland fixture log.
@Suite("Feature service")
struct ServerTests {
    static let base = ServedLog.base
    static let trees = try! Fixture.features("Trees")

    // MARK: Service root and definitions

    @Test func serviceRootListsLayersTablesAndServerGens() async throws {
        try await ServedLog.run { client, log in
            let r = try await client.getJSON(Self.base + "?f=json")
            #expect(r.status == .ok)
            let root = r.json
            #expect(root["layers"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Trees", "Neighborhoods"])
            #expect(root["tables"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Species", "Inspections"])
            #expect(root["syncEnabled"] == true)
            #expect(root["supportsApplyEditsWithGlobalIds"] == true)
            #expect(root["maxRecordCount"] == 1000)
            #expect(root["capabilities"]?.stringValue?.contains("Query") == true)
            #expect(root["extractChangesCapabilities"]?.objectValue != nil)
            let gens = root["changeTrackingInfo"]?["layerServerGens"]?.arrayValue ?? []
            #expect(gens.count == 4)
            let last = try log.value.lastPosition()
            #expect(gens.allSatisfy { $0["serverGen"]?.intValue == last })
            #expect(root["spatialReference"]?["wkid"] == 4326)
            // pjson: the same document, indented.
            let pretty = try await client.getJSON(Self.base + "?f=pjson")
            #expect(pretty.json == root)
            #expect(pretty.text.contains("\n  \"capabilities\" : "))
        }
    }

    @Test func layerDefinitionsAreTheStoredDocumentsPlusServiceFacts() async throws {
        try await ServedLog.run(configure: { $0.maxRecordCount = 100 }) { client, _ in
            let stored = try Fixture.json("service.json")["layers"]!.arrayValue![0]
            let r = try await client.getJSON(Self.base + "/0")
            #expect(r.status == .ok)
            let d = r.json
            #expect(d["fields"] == stored["fields"])
            #expect(d["drawingInfo"] == stored["drawingInfo"])
            #expect(d["name"] == "Trees")
            #expect(d["objectIdField"] == "OBJECTID")
            #expect(d["globalIdField"] == "GlobalID")
            #expect(d["maxRecordCount"] == 100)
            #expect(d["supportsAdvancedQueries"] == true)
            #expect(d["advancedQueryCapabilities"]?["supportsPagination"] == true)
            #expect(d["editFieldsInfo"]?["creatorField"] == "Creator")
            let table = try await client.getJSON(Self.base + "/2?f=json")
            #expect(table.json["type"] == "Table")
            #expect(table.json["name"] == "Species")
            let all = try await client.getJSON(Self.base + "/layers")
            #expect(all.json["layers"]?.arrayValue?.count == 2)
            #expect(all.json["tables"]?.arrayValue?.count == 2)
            #expect(all.json["tables"]?.arrayValue?.last?["maxRecordCount"] == 100)
        }
    }

    @Test func unknownPathsAre404() async throws {
        try await ServedLog.run { client, _ in
            for path in [Self.base + "/9", Self.base + "/0/nothing", "/arcgis/rest/services/Other/FeatureServer", "/elsewhere", Self.base + "/0/query/x"] {
                let r = try await client.getJSON(path)
                #expect(r.status == .notFound, "\(path)")
                #expect(r.json["error"]?["code"] == 404, "\(path)")
            }
        }
    }

    /// The routes (Hummingbird's router groups): a resource answers in any case, with or without `/arcgis`, its
    /// service's name percent-encoded or not; a path word where a number belongs names nothing; a bad token is
    /// refused on every path, an unknown one too, but not by the token service (a login is not refused for a stale
    /// token it carries).
    @Test func routesMatchInAnyCaseWithOrWithoutArcGISAndAuthenticationCoversThem() async throws {
        try await ServedLog.run { client, _ in
            let count = "?where=1%3D1&returnCountOnly=true&f=json"
            let expected = try await client.getJSON(Self.base + "/0/query" + count).json["count"]
            #expect(expected?.intValue ?? 0 > 0)
            for path in ["/rest/services/Trees/FeatureServer/0/query", "/ARCGIS/REST/services/trees/featureserver/0/QUERY", "/arcgis/rest/services/%54rees/FeatureServer/0/query"] {
                let r = try await client.getJSON(path + count)
                #expect(r.status == .ok && r.json["count"] == expected, "\(path): \(r.text.prefix(200))")
            }
            for path in [Self.base + "/0/one/attachments", Self.base + "/0/1/attachments/x", Self.base + "/x/query", "/arcgis/rest/services/Trees"] {
                let r = try await client.getJSON(path)
                #expect(r.status == .notFound && r.json["error"]?["code"] == 404, "\(path): \(r.text.prefix(200))")
            }
            for path in [Self.base + "/0/query", Self.base + "/nothing/here", "/arcgis/rest/info", "/arcgis/rest/services"] {
                let r = try await client.getJSON(path + "?token=wrong-token-123")
                #expect(r.json["error"]?["code"] == 498, "\(path): \(r.text.prefix(200))")
            }
            let login = try await client.postForm("/arcgis/tokens/generateToken", [("username", "a"), ("password", "b"), ("token", "wrong-token-123"), ("f", "json")])
            #expect(login.json["error"]?["code"] == 400 && login.text.contains("no users file"), "\(login.text.prefix(200))")
        }
    }

    @Test func readsNeedATokenUnlessAnonymousReadsAndBadTokensAreRefused() async throws {
        try await ServedLog.run(configure: { $0.anonymousReads = false }) { client, _ in
            let none = try await client.getJSON(Self.base)
            // Refusals are ArcGIS's: HTTP 200, the code in the body.
            #expect(none.status == .ok)
            #expect(none.json["error"]?["code"] == 499)
            let bad = try await client.getJSON(Self.base + "?token=wrong-token-123")
            #expect(bad.status == .ok)
            #expect(bad.json["error"]?["code"] == 498)
            let good = try await client.getJSON(Self.base + "?token=\(ServedLog.viewerToken)")
            #expect(good.status == .ok)
            let bearer = try await client.getJSON(Self.base + "/0", headers: [.authorization: "Bearer \(ServedLog.viewerToken)"])
            #expect(bearer.status == .ok)
            #expect(bearer.json["name"] == "Trees")
        }
    }

    // MARK: Query

    func expectCount(_ client: any TestClientProtocol, _ whereClause: String, _ expected: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let r = try await client.getJSON(Self.base + "/0/query" + queryString([("where", whereClause), ("returnCountOnly", "true"), ("f", "json")]))
        #expect(r.json["count"]?.intValue == Int64(expected), "\(whereClause): \(r.text)", sourceLocation: sourceLocation)
    }

    @Test func whereClausesSelectWhatTheBaselineHolds() async throws {
        let t = Self.trees
        @Sendable func n(_ p: ([String: JSONValue]) -> Bool) -> Int { t.filter(p).count }
        try await ServedLog.run { client, _ in
            try await expectCount(client, "1=1", t.count)
            try await expectCount(client, "Condition = 'Fair'", n { $0["Condition"] == "Fair" })
            try await expectCount(client, "condition <> 'Fair'", n { $0["Condition"] != "Fair" })
            try await expectCount(client, "Condition != 'Fair' AND NOT Condition = 'Good'", n { $0["Condition"] != "Fair" && $0["Condition"] != "Good" })
            try await expectCount(client, "DBH BETWEEN 5 AND 10", n { ($0["DBH"]?.doubleValue).map { $0 >= 5 && $0 <= 10 } ?? false })
            try await expectCount(client, "DBH NOT BETWEEN 5 AND 10", n { ($0["DBH"]?.doubleValue).map { $0 < 5 || $0 > 10 } ?? false })
            try await expectCount(client, "Condition IN ('Poor', 'Dead')", n { $0["Condition"] == "Poor" || $0["Condition"] == "Dead" })
            try await expectCount(client, "Wires NOT IN (0, 2)", n { $0["Wires"] == 1 })
            try await expectCount(client, "Address LIKE '%SE%'", n { $0["Address"]?.stringValue?.lowercased().contains("se") == true })
            try await expectCount(client, "UPPER(Neighborhood) LIKE 'BUCK_AN'", n { $0["Neighborhood"] == "Buckman" })
            try await expectCount(client, "SpeciesGlobalID IS NULL", n { $0["SpeciesGlobalID"]?.isNull ?? true })
            try await expectCount(client, "SpeciesGlobalID IS NOT NULL", n { !($0["SpeciesGlobalID"]?.isNull ?? true) })
            try await expectCount(client, "(Condition = 'Good' OR Condition = 'Fair') AND DBH >= 10.5",
                                  n { ($0["Condition"] == "Good" || $0["Condition"] == "Fair") && ($0["DBH"]?.doubleValue ?? -1) >= 10.5 })
            try await expectCount(client, "OBJECTID <= 10", 10)
            try await expectCount(client, "PlantedDate < DATE '2018-01-01'", n { ($0["PlantedDate"]?.intValue ?? Int64.max) < 1_514_764_800_000 })
            let gid = t[3]["GlobalID"]!.stringValue!
            try await expectCount(client, "GlobalID = '\(gid.lowercased())'", 1)
        }
    }

    @Test func injectionAttemptsAreQueryErrorsAndChangeNothing() async throws {
        try await ServedLog.run { client, log in
            let before = try log.value.eventCount()
            let attempts = [
                "1=1; DROP TABLE p_layer_0", "1=1; DROP TABLE x", "OBJECTID=1 OR 1=1--", "OBJECTID=1 /* c */", "\"OBJECTID\" = 1", "[OBJECTID] = 1",
                "OBJECT\"ID = 1", "Condition = 'Fair'; DELETE FROM events", "Condition = 'Fair'' OR ''1''=''1", "x = 1", "_deleted = 1", "_oid > 0",
                "OBJECTID = 1 UNION SELECT * FROM events", "(SELECT 1) = 1", "Condition = 'unterminated", "OBJECTID", "sqlite_master = 1",
                "OBJECTID = 1) OR (1=1", "Condition LIKE 'F%' ESCAPE 'ab'", "Shape = 1",
            ]
            for w in attempts {
                for method in ["GET", "POST"] {
                    let r = method == "GET"
                        ? try await client.getJSON(Self.base + "/0/query" + queryString([("where", w), ("f", "json")]))
                        : try await client.postForm(Self.base + "/0/query", [("where", w), ("f", "json")])
                    #expect(r.status == .ok, "\(w)")
                    #expect(r.json["error"]?["code"] == 400, "\(method) \(w): \(r.text)")
                    #expect(r.json["error"]?["message"]?.stringValue == ArcGISResponse.queryErrorMessage, "\(w)")
                }
            }
            // A quote inside a string literal is a value, not SQL.
            try await expectCount(client, "Condition = 'Fair'' OR ''1''=''1'", 0)
            #expect(try log.value.eventCount() == before)
            try await expectCount(client, "1=1", Self.trees.count)
        }
    }

    @Test func objectIdsOutFieldsGeometryAndOrder() async throws {
        try await ServedLog.run { client, _ in
            // Every ObjectID of the layer in one request: no cap below 200 ids.
            let all = (1...240).map(String.init).joined(separator: ",")
            let many = try await client.postForm(Self.base + "/0/query", [("objectIds", all), ("outFields", "*"), ("f", "json")])
            #expect(many.json["features"]?.arrayValue?.count == 240)
            let r = try await client.getJSON(Self.base + "/0/query" + queryString([("objectIds", "3, 1,2"), ("outFields", "OBJECTID,Condition"),
                                                                                   ("orderByFields", "OBJECTID DESC"), ("f", "json")]))
            let features = r.json["features"]?.arrayValue ?? []
            #expect(features.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } == [3, 2, 1])
            #expect(features.first?["attributes"]?.objectValue?.keys.sorted() == ["Condition", "OBJECTID"])
            #expect(features.first?["geometry"]?["x"]?.doubleValue != nil)
            #expect(r.json["fields"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["OBJECTID", "Condition"])
            #expect(r.json["objectIdFieldName"] == "OBJECTID")
            #expect(r.json["geometryType"] == "esriGeometryPoint")
            #expect(r.json["spatialReference"]?["wkid"] == 4326)
            #expect(r.json["exceededTransferLimit"] == nil)
            // No outFields: the ObjectID only, as ArcGIS; no geometry when asked; unknown parameters and empty ones ignored.
            let bare = try await client.getJSON(Self.base + "/0/query?where=OBJECTID%3D5&returnGeometry=false&outSR=&bogus=1&f=json")
            #expect(bare.json["features"]?.arrayValue?.first?["attributes"]?.objectValue?.keys.sorted() == ["OBJECTID"])
            #expect(bare.json["features"]?.arrayValue?.first?["geometry"] == nil)
            // Unknown outFields or orderByFields are query errors.
            let badOut = try await client.getJSON(Self.base + "/0/query?where=1%3D1&outFields=Nope")
            #expect(badOut.json["error"]?["code"] == 400)
            let badOrder = try await client.getJSON(Self.base + "/0/query?where=1%3D1&orderByFields=Condition%3BDROP")
            #expect(badOrder.json["error"]?["code"] == 400)
        }
    }

    @Test func pagingHonoursMaxRecordCountAndReportsExceededTransferLimit() async throws {
        try await ServedLog.run(configure: { $0.maxRecordCount = 100 }) { client, _ in
            var seen: [Int64] = []
            var offset = 0
            var pages = 0
            while true {
                let r = try await client.getJSON(Self.base + "/0/query" + queryString([("where", "1=1"), ("outFields", "OBJECTID"), ("orderByFields", "OBJECTID"),
                                                                                       ("resultOffset", String(offset)), ("resultRecordCount", "100"), ("f", "json")]))
                let ids = r.json["features"]?.arrayValue?.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } ?? []
                seen += ids
                pages += 1
                if r.json["exceededTransferLimit"] != true { break }
                offset += ids.count
            }
            #expect(pages == 3)
            #expect(seen == Array(1...240))
            // Without paging parameters: maxRecordCount features and the flag.
            let first = try await client.getJSON(Self.base + "/0/query?where=1%3D1&f=json")
            #expect(first.json["features"]?.arrayValue?.count == 100)
            #expect(first.json["exceededTransferLimit"] == true)
            // A record count above maxRecordCount is capped.
            let capped = try await client.getJSON(Self.base + "/0/query?where=1%3D1&resultRecordCount=5000&f=json")
            #expect(capped.json["features"]?.arrayValue?.count == 100)
        }
    }

    @Test func countIdsExtentAndGeoJSON() async throws {
        try await ServedLog.run { client, _ in
            let ids = try await client.getJSON(Self.base + "/0/query" + queryString([("where", "Condition = 'Dead'"), ("returnIdsOnly", "true")]))
            let expected = Self.trees.filter { $0["Condition"] == "Dead" }.compactMap { $0["OBJECTID"]?.intValue }
            #expect(ids.json["objectIdFieldName"] == "OBJECTID")
            #expect(ids.json["objectIds"]?.arrayValue?.compactMap(\.intValue) == expected)
            let count = try await client.getJSON(Self.base + "/2/query?where=1%3D1&returnCountOnly=true")
            #expect(count.json["count"] == 45)
            let extent = try await client.getJSON(Self.base + "/0/query?where=1%3D1&returnExtentOnly=true&returnCountOnly=true")
            #expect(extent.json["count"] == 240)
            let e = extent.json["extent"]
            #expect((e?["xmin"]?.doubleValue ?? 0) < (e?["xmax"]?.doubleValue ?? 0))
            #expect(e?["spatialReference"]?["wkid"] == 4326)
            let geo = try await client.getJSON(Self.base + "/0/query" + queryString([("where", "OBJECTID IN (1,2)"), ("outFields", "*"), ("f", "geojson")]))
            #expect(geo.contentType?.hasPrefix("application/geo+json") == true)
            #expect(geo.json["type"] == "FeatureCollection")
            let f = geo.json["features"]?.arrayValue ?? []
            #expect(f.count == 2)
            #expect(f.first?["geometry"]?["type"] == "Point")
            #expect(f.first?["id"] == 1)
            #expect(f.first?["properties"]?["Condition"] == Self.trees[0]["Condition"])
            // Tables: no geometry.
            let table = try await client.getJSON(Self.base + "/2/query?where=OBJECTID%3D1&outFields=*&f=json")
            #expect(table.json["features"]?.arrayValue?.first?["attributes"]?["CommonName"] == "Red Maple")
            #expect(table.json["geometryType"] == nil)
        }
    }

    @Test func deletedFeaturesAreNotQueried() async throws {
        try await ServedLog.run { client, log in
            let gid = Self.trees[0]["GlobalID"]!.stringValue!
            try log.value.run(#"{"op":"delete","layer":"Trees","globalId":"\#(gid)"}"#)
            let r = try await client.getJSON(Self.base + "/0/query?where=1%3D1&returnCountOnly=true")
            #expect(r.json["count"] == 239)
            let byId = try await client.getJSON(Self.base + "/0/query?objectIds=1&f=json")
            #expect(byId.json["features"]?.arrayValue?.isEmpty == true)
        }
    }

    /// Reads do not wait for a write: another connection holds the write lock with an uncommitted change, and a
    /// query answers with the last committed state. (A read that waited for the lock would fail with SQLite's
    /// busy error after the timeout, not answer; no wall-clock bound here: under a parallel test run the task
    /// itself can wait for a thread, which says nothing about SQLite.)
    @Test func readsDoNotWaitForAWriteInProgress() async throws {
        try await ServedLog.run { client, log in
            var config = Configuration()
            config.allowsUnsafeTransactions = true
            let writer = try DatabaseQueue(path: log.value.path, configuration: config)
            try writer.inDatabase { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                try db.execute(sql: #"UPDATE p_layer_0 SET "Condition" = 'Dead'"#)
            }
            let r = try await client.getJSON(Self.base + "/0/query" + queryString([("where", "Condition = 'Dead'"), ("returnCountOnly", "true")]))
            #expect(r.status == .ok && r.json["error"] == nil, "\(r.text)")
            #expect(r.json["count"]?.intValue == Int64(Self.trees.filter { $0["Condition"] == "Dead" }.count), "\(r.text)")
            try writer.inDatabase { db in try db.execute(sql: "ROLLBACK") }
            try writer.close()
        }
    }
}
