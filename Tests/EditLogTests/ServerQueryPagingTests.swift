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
            for form in [[("where", "OBJECTID <= 30"), ("outFields", "*")], [("objectIds", "1,2,3"), ("outFields", "Condition,DBH,OBJECTID")],
                         [("where", "1=1"), ("outFields", "*"), ("returnGeometry", "false"), ("resultRecordCount", "5")]] {
                let fast = try await client.getJSON(Self.base + "/0/query" + queryString(form + [("f", "json")]))
                let canonical = try await client.getJSON(Self.base + "/0/query" + queryString(form + [("f", "pjson")]))
                #expect(fast.json != .null)
                #expect(fast.json == canonical.json, "\(fast.text.prefix(300))\n\(canonical.text.prefix(300))")
                #expect(fast.contentType?.hasPrefix("application/json") == true)
            }
            // Fields in the layer's order, as ArcGIS lists them.
            let one = try await client.getJSON(Self.base + "/0/query?objectIds=1&outFields=*&f=json")
            #expect(one.text.range(of: #"{"attributes":{"OBJECTID":1,"GlobalID":"#) != nil, "\(one.text.prefix(400))")
        }
    }
}
