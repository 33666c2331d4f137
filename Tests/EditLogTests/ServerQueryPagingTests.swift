import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// A query by `objectIds` answers batches of 200 whatever `maxRecordCount` (Esri's Python API reads each
/// batch whole), and the feature set written straight to bytes (`f=json`) holds what the canonical
/// `JSONValue` document (`f=pjson`) holds.
@Suite("Feature service: objectIds pages and the f=json writer")
struct ServerQueryPagingTests {
    static let base = ServedLog.base

    @Test func objectIdsBatchesOf200AreAnsweredWholeAndOtherQueriesStayCapped() async throws {
        try await ServedLog.run(configure: { $0.maxRecordCount = 50 }) { client, _ in
            let ids = (1...240).map(String.init).joined(separator: ",")
            let batch = try await client.getJSON(Self.base + "/0/query" + queryString([("objectIds", (1...200).map(String.init).joined(separator: ",")), ("f", "json")]))
            #expect(batch.json["features"]?.arrayValue?.count == 200)
            #expect(batch.json["exceededTransferLimit"] == nil)
            let more = try await client.getJSON(Self.base + "/0/query" + queryString([("objectIds", ids), ("f", "json")]))
            #expect(more.json["features"]?.arrayValue?.count == 200)
            #expect(more.json["exceededTransferLimit"] == true)
            let next = try await client.getJSON(Self.base + "/0/query" + queryString([("objectIds", ids), ("resultOffset", "200"), ("f", "json")]))
            #expect(next.json["features"]?.arrayValue?.compactMap { $0["attributes"]?["OBJECTID"]?.intValue } == Array(201...240))
            let capped = try await client.getJSON(Self.base + "/0/query" + queryString([("objectIds", ids), ("resultRecordCount", "10"), ("f", "json")]))
            #expect(capped.json["features"]?.arrayValue?.count == 10)
            let byWhere = try await client.getJSON(Self.base + "/0/query" + queryString([("where", "1=1"), ("f", "json")]))
            #expect(byWhere.json["features"]?.arrayValue?.count == 50)
            #expect(byWhere.json["exceededTransferLimit"] == true)
        }
    }

    @Test func fJSONHoldsTheCanonicalDocument() async throws {
        try await ServedLog.run { client, _ in
            // A feature whose text needs escaping and whose stored geometry names a spatial reference (the
            // writer copies stored geometry bytes unless they name one), and an inspection (a table).
            let odd = #"quote \" backslash \\ newline \n tab \t control \u0001 é 🌳"#
            let adds = #"[{"attributes":{"Condition":"Good","DBH":3.25,"PlantedBy":"\#(odd)","PlantedDate":1700000000000},"geometry":{"x":-122.6,"y":45.52,"spatialReference":{"wkid":4326}}}]"#
            let added = try await client.postForm(Self.base + "/0/applyEdits", [("adds", adds), ("f", "json"), ("token", ServedLog.editorToken)])
            let oid = try #require(added.json["addResults"]?.arrayValue?.first?["objectId"]?.intValue, "\(added.text.prefix(400))")
            for (layer, form) in [("0", [("where", "OBJECTID <= 30"), ("outFields", "*")]), ("0", [("objectIds", "1,2,3"), ("outFields", "Condition,DBH,OBJECTID")]),
                                  ("0", [("where", "1=1"), ("outFields", "*"), ("returnGeometry", "false"), ("resultRecordCount", "5")]),
                                  ("0", [("objectIds", "\(oid)"), ("outFields", "*")]), ("0", [("objectIds", "\(oid),1"), ("outFields", "PlantedBy,GlobalID")]),
                                  ("0", [("where", "1=1"), ("resultRecordCount", "0")]), ("3", [("where", "1=1"), ("outFields", "*")])] {
                let fast = try await client.getJSON(Self.base + "/\(layer)/query" + queryString(form + [("f", "json")]))
                let canonical = try await client.getJSON(Self.base + "/\(layer)/query" + queryString(form + [("f", "pjson")]))
                #expect(fast.json["features"]?.arrayValue != nil, "\(fast.text.prefix(300))")
                #expect(fast.json == canonical.json, "\(fast.text.prefix(300))\n\(canonical.text.prefix(300))")
                #expect(fast.contentType?.hasPrefix("application/json") == true)
            }
            let odd1 = try await client.getJSON(Self.base + "/0/query?objectIds=\(oid)&outFields=PlantedBy&f=json")
            #expect(odd1.json["features"]?.arrayValue?.first?["attributes"]?["PlantedBy"] == (try JSONParser.parse("\"\(odd)\"")), "\(odd1.text.prefix(400))")
            #expect(odd1.json["features"]?.arrayValue?.first?["geometry"]?["x"] == .double(-122.6))
            #expect(odd1.json["features"]?.arrayValue?.first?["geometry"]?["spatialReference"] == nil)
            // Fields in the layer's order, as ArcGIS lists them.
            let one = try await client.getJSON(Self.base + "/0/query?objectIds=1&outFields=*&f=json")
            #expect(one.text.range(of: #"{"attributes":{"OBJECTID":1,"GlobalID":"#) != nil, "\(one.text.prefix(400))")
        }
    }
}
