import EditLog
import Foundation
import Testing

/// One Esri JSON → GeoJSON conversion (`Geometry.geoJSON`) behind every GeoJSON output: a polyline is a
/// MultiLineString whether it has one path or several.
@Suite struct GeoJSONGeometryTests {
    static let onePath: JSONValue = ["paths": [[[-122.6, 45.5], [-122.61, 45.51], [-122.62, 45.5]]], "spatialReference": ["wkid": 4326]]
    static let twoPaths: JSONValue = ["paths": [[[-122.6, 45.5], [-122.61, 45.51]], [[-122.7, 45.6], [-122.71, 45.61], [-122.72, 45.6]]],
                                      "spatialReference": ["wkid": 4326]]

    @Test func aPolylineIsAMultiLineStringOfEveryPath() throws {
        for (g, paths) in [(Self.onePath, 1), (Self.twoPaths, 2)] {
            let gj = try #require(Geometry.geoJSON(g))
            #expect(gj["type"] == "MultiLineString")
            let coordinates = try #require(gj["coordinates"]?.arrayValue)
            #expect(coordinates.count == paths)
            #expect(coordinates == g["paths"]?.arrayValue?.map { path in .array((path.arrayValue ?? []).map { p in .array((p.arrayValue ?? []).map { .double($0.doubleValue!) }) }) })
        }
    }

    @Test func pointsMultipointsAndPolygons() throws {
        #expect(Geometry.geoJSON(["x": 1, "y": 2]) == ["type": "Point", "coordinates": [.double(1), .double(2)]])
        // x and y only: z and m are dropped, as the WKB the exports write does.
        #expect(Geometry.geoJSON(["points": [[1, 2, 3], [4, 5]]]) == ["type": "MultiPoint", "coordinates": [[.double(1), .double(2)], [.double(4), .double(5)]]])
        let ring: JSONValue = [[0, 0], [0, 1], [1, 1], [0, 0]], hole: JSONValue = [[0.2, 0.2], [0.4, 0.2], [0.4, 0.4], [0.2, 0.2]]
        let polygon = try #require(Geometry.geoJSON(["rings": [ring, hole]]))
        #expect(polygon["type"] == "Polygon" && polygon["coordinates"]?.arrayValue?.count == 2)
        #expect(Geometry.geoJSON(nil) == nil && Geometry.geoJSON(.null) == nil && Geometry.geoJSON(["xmin": 0, "ymin": 0, "xmax": 1, "ymax": 1]) == nil)
    }
}

extension GeoJSONGeometryTests {
    /// The Trees layer as a polyline layer (no rules: theirs read points), without a baseline.
    static func polylineLog(_ path: String) throws -> EditLog {
        let text = try String(contentsOfFile: Paths.trees + "/service.json", encoding: .utf8)
            .replacingOccurrences(of: "\"esriGeometryPoint\"", with: "\"esriGeometryPolyline\"")
        #expect(text.contains("esriGeometryPolyline"))
        return try EditLog.create(at: path, service: [("service.json", try JSONParser.parse(text))], baseline: [],
                                  clock: StepClock(start: 1_780_000_000_000, step: 7), logId: "polylines")
    }

    @Suite(.tags(.process)) struct ProcessTests {
        /// `diff --format geojson`, `export` and `replay` to .geojson write the same geometry for a polyline of one
        /// path and one of several.
        @Test func diffExportAndReplayWriteTheSameGeometry() throws {
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { Issue.record("no binary at \(CLI.binary)"); return }
            let tmp = TempPath()
            let log = try GeoJSONGeometryTests.polylineLog(tmp.path)
            let one = "{00000000-0000-4000-8000-0000000000A1}", two = "{00000000-0000-4000-8000-0000000000A2}"
            for (g, geometry) in [(one, GeoJSONGeometryTests.onePath), (two, GeoJSONGeometryTests.twoPaths)] {
                _ = try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(g)","session":"s-\#(g.suffix(3).prefix(2))","geometry":\#(geometry.serialized()),"attributes":{"Condition":"Good"}}"#,
                                #"{"op":"finish"}"#)
            }
            let head = try log.eventCount()
            log.close()
            let dir = ReplayExportTests.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }

            /// Each feature's geometry by GlobalID.
            func geometries(_ fc: JSONValue, globalId: (JSONValue) -> String?) -> [String: JSONValue] {
                var out: [String: JSONValue] = [:]
                for f in fc["features"]?.arrayValue ?? [] { if let g = globalId(f) { out[g] = f["geometry"] ?? .null } }
                return out
            }
            let d = try CLI.run("diff", tmp.path, "0", "\(head)", "--layer", "Trees", "--format", "geojson")
            #expect(d.status == 0, "\(d.stderr)")
            let fromDiff = geometries(try JSONParser.parse(d.stdout)) { $0["properties"]?["globalId"]?.stringValue }
            var outputs = ["diff": fromDiff]
            for (command, out) in [(["export", tmp.path], dir + "/live.geojson"), (["replay", tmp.path, "--as-of", "\(head)"], dir + "/replay.geojson")] {
                let r = try CLI.run(command + ["--out", out, "--layer", "Trees"])
                #expect(r.status == 0, "\(command[0]): \(r.stderr)")
                let fc = try JSONParser.parse(try String(contentsOfFile: out, encoding: .utf8))
                outputs[command[0]] = geometries(fc) { $0["properties"]?["GlobalID"]?.stringValue }
            }
            #expect(Set(fromDiff.keys) == [one, two])
            #expect(fromDiff[one]?["type"] == "MultiLineString" && fromDiff[one]?["coordinates"]?.arrayValue?.count == 1)
            #expect(fromDiff[two]?["type"] == "MultiLineString" && fromDiff[two]?["coordinates"]?.arrayValue?.count == 2)
            for (name, byId) in outputs {
                #expect(byId == fromDiff, "\(name) writes other geometry than diff: \(byId) against \(fromDiff)")
                #expect(byId[one] == Geometry.geoJSON(GeoJSONGeometryTests.onePath) && byId[two] == Geometry.geoJSON(GeoJSONGeometryTests.twoPaths))
            }
        }
    }
}
