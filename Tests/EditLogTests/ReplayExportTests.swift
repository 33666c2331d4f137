import EditLog
import EditLogExport
import EditLogProjections
import Foundation
import GRDB
import Testing

/// Replay as of a moment (with and without checkpoints) against a rebuild of the prefix, and the exports.
@Suite struct ReplayExportTests {
    /// A Trees of Portland log with a random history (the generator of `RebuildPropertyTests`).
    static func randomLog(at path: String, seed: UInt64, steps: Int = 150) throws -> EditLog {
        let log = try Fixture.treesLog(at: path, seed: seed)
        var editor = RebuildPropertyTests.RandomEditor(rng: SplitMix64(seed: seed), trees: Array(try Fixture.globalIds("Trees").prefix(30)), species: try Fixture.globalIds("Species"))
        _ = try RebuildPropertyTests.drive(log, editor: &editor, steps: steps)
        return log
    }

    /// The reference: a fresh database holding only the first `p` events, rebuilt.
    static func digestOfPrefix(_ path: String, _ p: Int64) throws -> String {
        let memory = try DatabaseQueue()
        try memory.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [path])
            try db.execute(sql: "CREATE TABLE events AS SELECT * FROM src.events WHERE position <= ?", arguments: [p])
            try db.execute(sql: "DETACH DATABASE src")
        }
        return try memory.write { db in
            try Projections.rebuild(db)
            return try Projections.digest(db).digest
        }
    }

    static func removeCheckpoints(_ log: EditLog) { try? FileManager.default.removeItem(atPath: log.path + ".checkpoints") }

    @Test(arguments: [UInt64(1), 2, 3])
    func replayAtAPositionEqualsARebuildOfThePrefix(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try Self.randomLog(at: tmp.path, seed: seed)
        defer { Self.removeCheckpoints(log) }
        let head = try log.eventCount()
        var rng = SplitMix64(seed: seed &+ 99)
        let every = max(5, head / 6)
        var positions: [Int64] = [1, head, every, every + 1]
        for _ in 0..<4 { positions.append(1 + Int64(rng.next() % UInt64(head))) }
        var reference: [Int64: String] = [:]
        for p in positions {
            reference[p] = try Self.digestOfPrefix(tmp.path, p)
            let r = try log.replayDigest(asOf: .position(p), useCheckpoints: false)
            #expect(r.position == p && r.checkpoint == 0)
            #expect(r.digest == reference[p], "replay at \(p) of \(head) differs from a rebuild of the first \(p) events")
        }
        #expect(reference[head] == (try log.digestOfProjections()), "replay at the head is the live state")

        let written = try log.createCheckpoints(every: every)
        #expect(written.map(\.position) == stride(from: every, through: head, by: Int(every)).map { Int64($0) })
        #expect(try log.verifyCheckpoints().isEmpty)
        for p in positions {
            let r = try log.replayDigest(asOf: .position(p))
            #expect(r.checkpoint == (p / every) * every, "replay at \(p) starts from the nearest checkpoint")
            #expect(r.digest == reference[p], "replay at \(p) from the checkpoint at \(r.checkpoint) differs")
            #expect(r.skippedCheckpoints.isEmpty)
        }

        // A missing checkpoint is made again from the one before it; the others are left alone.
        let last = try log.checkpoints().last!
        try FileManager.default.removeItem(atPath: last.path)
        #expect(try log.createCheckpoints(every: every) == [last])
        #expect(try log.createCheckpoints(every: every).isEmpty)
        #expect(try log.replayDigest(asOf: .position(head)).digest == reference[head])
    }

    /// `Projections.digest` (read from SQLite's column buffers) is the SHA-256 of each table's name and every value
    /// tagged by storage class, as the `Row`-based digest checkpoints were first made with computed it.
    @Test func theDigestIsTheTaggedValueStreamOfEveryTable() throws {
        let tmp = TempPath()
        let log = try Self.randomLog(at: tmp.path, seed: 11, steps: 80)
        let live = try log.digestOfProjections()
        let reference = try RawLog.read(tmp.path) { db -> String in
            var all = ContentDigest()
            for table in try ProjectionTables.all(db) {
                var h = ContentDigest()
                h.update(Array(table.utf8))
                let cursor = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) ORDER BY 1")
                while let row = try cursor.next() {
                    for v in row.databaseValues {
                        switch v.storage {
                        case .null: h.update([0])
                        case .int64(let x): h.update([1]); withUnsafeBytes(of: x.bigEndian) { h.update($0) }
                        case .double(let x): h.update([2]); withUnsafeBytes(of: x.bitPattern.bigEndian) { h.update($0) }
                        case .string(let s): h.update([3]); let b = Array(s.utf8); withUnsafeBytes(of: UInt64(b.count).bigEndian) { h.update($0) }; h.update(b)
                        case .blob(let d): h.update([4]); withUnsafeBytes(of: UInt64(d.count).bigEndian) { h.update($0) }; h.update(d)
                        }
                    }
                }
                all.update(Array("\(table)=\(Hex.encode(h.finalize()));".utf8))
            }
            return Hex.encode(all.finalize())
        }
        #expect(live == reference)
        // Every storage class is in there: integers, doubles, text, blobs (WKB) and NULLs.
        let classes = try RawLog.read(tmp.path) { db in try String.fetchAll(db, sql: "SELECT DISTINCT typeof(_wkb) FROM p_layer_0 UNION SELECT DISTINCT typeof(DBH) FROM p_layer_0 UNION SELECT typeof(_oid) FROM p_layer_0 UNION SELECT typeof(_globalid) FROM p_layer_0") }
        #expect(Set(classes).isSuperset(of: ["blob", "real", "integer", "text"]), "\(classes)")
    }

    @Test func aChangedCheckpointIsReportedAndNotUsed() throws {
        let tmp = TempPath()
        let log = try Self.randomLog(at: tmp.path, seed: 7, steps: 60)
        defer { Self.removeCheckpoints(log) }
        let head = try log.eventCount()
        let every = head / 2
        _ = try log.createCheckpoints(every: every)
        let reference = try Self.digestOfPrefix(tmp.path, head)
        let first = try log.checkpoints()[0]
        try RawLog.write(first.path) { db in try db.execute(sql: "UPDATE p_layer_0 SET DBH = 1234.5 WHERE _oid = 3") }
        let problems = try log.verifyCheckpoints()
        #expect(problems.count == 1 && problems[0].contains("digest"))
        let r = try log.replayDigest(asOf: .position(every + 1))
        #expect(r.checkpoint == 0 && r.skippedCheckpoints.count == 1)
        #expect(r.skippedCheckpoints.first?.contains("bytes changed") == true, "the fingerprint written with it catches it while copying")
        #expect(r.digest == (try Self.digestOfPrefix(tmp.path, every + 1)))
        #expect(try log.replayDigest(asOf: .position(head)).digest == reference)
        // Without its fingerprint (a checkpoint from before fingerprints, or one deleted), every row is checked instead.
        try FileManager.default.removeItem(atPath: first.path + ".sha256")
        let r2 = try log.replayDigest(asOf: .position(every + 1))
        #expect(r2.checkpoint == 0 && r2.skippedCheckpoints.first?.contains("digest") == true)
    }

    @Test func aTimeSelectsThePrefixByRecordedOrClientTime() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let tree = try Fixture.globalIds("Trees")[0]
        let events = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"s1","at":"2020-01-01T00:00:00Z"}"#,
                                 #"{"op":"set","field":"PlantedBy","value":"old clock","session":"s1"}"#, #"{"op":"finish","session":"s1"}"#)
        let last = events.last!.position
        let mid = events[1]
        #expect(try log.position(asOf: .time(mid.recordedTime), by: .recorded) == mid.position)
        #expect(try log.position(asOf: .time("2020-06-01T00:00:00.000Z"), by: .recorded) == 0)
        #expect(try log.position(asOf: .time("2020-06-01T00:00:00.000Z"), by: .client) == last)
        let r = try log.replayDigest(asOf: .time("2020-06-01T00:00:00.000Z"), by: .client)
        #expect(r.position == last && r.laterClientEvents > 0)
        #expect(throws: EditLogError.self) { try log.replayDigest(asOf: .time("2020-06-01T00:00:00.000Z"), by: .recorded) }
        #expect(LogMoment("12") == .position(12))
        #expect(LogMoment("2026-05-01T09:00:00+02:00") == .time("2026-05-01T07:00:00.000Z"))
        #expect(LogMoment("yesterday") == nil)
    }

    /// A log with one tree deleted, so exports must leave it out.
    static func logWithADeletion(_ path: String) throws -> (EditLog, deleted: String) {
        let log = try Fixture.treesLog(at: path)
        let tree = try Fixture.treeWithoutInspections()
        _ = try log.run(#"{"op":"delete","layer":"Trees","globalId":"\#(tree)","actor":"ann"}"#)
        return (log, tree)
    }

    static func liveCount(_ path: String, layer: Int) throws -> Int {
        try RawLog.read(path) { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM p_layer_\(layer) WHERE _deleted = 0") ?? 0 }
    }

    static func tempDir() -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-export-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func theGeoPackageHasTheGpkgTablesAndTheLiveFeatures() throws {
        let tmp = TempPath()
        let (log, deleted) = try Self.logWithADeletion(tmp.path)
        let dir = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/live.gpkg"
        let s = try log.export(to: out)
        #expect(s.files == [out])
        try RawLog.read(out) { db in
            #expect(try Int.fetchOne(db, sql: "PRAGMA application_id") == 0x4750_4B47)
            #expect(try Int.fetchOne(db, sql: "PRAGMA user_version") == 10300)
            #expect(try Int.fetchAll(db, sql: "SELECT srs_id FROM gpkg_spatial_ref_sys ORDER BY srs_id") == [-1, 0, 4326])
            let contents = try Row.fetchAll(db, sql: "SELECT table_name, data_type, srs_id, min_x FROM gpkg_contents ORDER BY table_name")
            #expect(contents.map { $0[0] as String } == ["Inspections", "Neighborhoods", "Species", "Trees"])
            #expect(contents.map { $0[1] as String } == ["attributes", "features", "attributes", "features"])
            #expect((contents[3][2] as Int?) == 4326 && (contents[3][3] as Double?) != nil)
            let geom = try Row.fetchAll(db, sql: "SELECT table_name, column_name, geometry_type_name, srs_id FROM gpkg_geometry_columns ORDER BY table_name")
            #expect(geom.map { "\($0[0] as String).\($0[1] as String) \($0[2] as String) \($0[3] as Int)" } == ["Neighborhoods.geom POLYGON 4326", "Trees.geom POINT 4326"])
            for (name, id) in [("Trees", 0), ("Neighborhoods", 1), ("Species", 2), ("Inspections", 3)] {
                #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(name)") == (try Self.liveCount(tmp.path, layer: id)), "\(name)")
            }
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Trees WHERE GlobalID = ?", arguments: [deleted]) == 0)
            // The blob: GP, version 0, flags (envelope xy, little-endian), srs_id, envelope, then the projection's WKB.
            let row = try Row.fetchOne(db, sql: "SELECT OBJECTID, geom FROM Trees ORDER BY OBJECTID LIMIT 1")!
            let blob = [UInt8](row[1] as Data)
            #expect(Array(blob[0..<4]) == [0x47, 0x50, 0, 3])
            #expect(blob[4..<8].withUnsafeBytes { Int32(littleEndian: $0.loadUnaligned(as: Int32.self)) } == 4326)
            let wkb = try RawLog.read(tmp.path) { db in try Data.fetchOne(db, sql: "SELECT _wkb FROM p_layer_0 WHERE _oid = ?", arguments: [row[0] as Int64]) }
            #expect(Array(blob[40...]) == [UInt8](wkb!))
            let minX = blob[8..<16].withUnsafeBytes { Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))) }
            let x = blob[45..<53].withUnsafeBytes { Double(bitPattern: UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))) }
            #expect(minX == x, "a point's envelope is the point")
        }
    }

    static let ogrinfo: String? = ["/usr/bin/ogrinfo", "/usr/local/bin/ogrinfo"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// GDAL's GeoPackage validator (python3-gdal, which gdal-bin brings), when present: it checks the
    /// requirements of the standard one by one.
    static let gdalValidator = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py"

    static func validateWithGDAL(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: gdalValidator) else { return }
        let v = try CLI.sh("python3 '\(gdalValidator)' '\(path)'")
        #expect(v.status == 0 && v.stdout.isEmpty, "validate_gpkg.py: \(v.stdout)\(v.stderr)")
    }

    @Test func geoJSONAndCSVHaveOneFeaturePerLiveRow() throws {
        let tmp = TempPath()
        let (log, deleted) = try Self.logWithADeletion(tmp.path)
        let dir = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let trees = try Self.liveCount(tmp.path, layer: 0), hoods = try Self.liveCount(tmp.path, layer: 1), species = try Self.liveCount(tmp.path, layer: 2)

        // One layer: --out is the file.
        _ = try log.export(to: dir + "/trees.geojson", layers: ["Trees"])
        let fc = try JSONParser.parse(try String(contentsOfFile: dir + "/trees.geojson", encoding: .utf8))
        #expect(fc["type"]?.stringValue == "FeatureCollection" && fc["crs"] == nil)
        let features = fc["features"]?.arrayValue ?? []
        #expect(features.count == trees)
        #expect(features[0]["geometry"]?["type"]?.stringValue == "Point")
        #expect(!features.contains { $0["properties"]?["GlobalID"]?.stringValue == deleted })

        // Several layers: --out is a folder with one file per layer.
        let s = try log.export(to: dir + "/all.geojson/", layers: ["Neighborhoods", "Species"])
        #expect(s.files == [dir + "/all.geojson/Neighborhoods.geojson", dir + "/all.geojson/Species.geojson"])
        let n = try JSONParser.parse(try String(contentsOfFile: s.files[0], encoding: .utf8))
        #expect(n["features"]?.arrayValue?.count == hoods && n["features"]?.arrayValue?.first?["geometry"]?["type"]?.stringValue == "Polygon")
        let sp = try JSONParser.parse(try String(contentsOfFile: s.files[1], encoding: .utf8))
        #expect(sp["features"]?.arrayValue?.count == species && sp["features"]?.arrayValue?.first?["geometry"]?.isNull == true)

        let c = try log.export(to: dir + "/all.csv", layers: ["Trees", "Neighborhoods"])
        #expect(c.files == [dir + "/all.csv/Trees.csv", dir + "/all.csv/Neighborhoods.csv"])
        let treeLines = try String(contentsOfFile: c.files[0], encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(treeLines.count == 1 + trees)
        #expect(treeLines[0].hasPrefix("OBJECTID,GlobalID,") && treeLines[0].hasSuffix(",x,y"))
        let hoodLines = try String(contentsOfFile: c.files[1], encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(hoodLines.count == 1 + hoods && hoodLines[0].hasSuffix(",wkt") && hoodLines[1].contains("\"POLYGON (("))
        // An existing output is refused without overwrite.
        #expect(throws: EditLogError.self) { try log.export(to: c.files[0], layers: ["Trees"]) }
        #expect(try log.export(to: c.files[0], layers: ["Trees"], overwrite: true).files == [c.files[0]])
    }
}

/// A layer whose service gives Esri's Web Mercator (102100): the GeoPackage defines EPSG:3857, GeoJSON names it.
@Suite struct ExportSpatialReferenceTests {
    @Test func theSpatialReferenceComesFromTheLayerDefinition() throws {
        let layer = try Fixture.json("service.json")
        let schema = try ArcGISSchemaDecoder.decode(service: [("service.json", layer)], webmap: nil, rules: nil)
        let trees = schema.layer("Trees")!, species = schema.layer("Species")!
        let own: JSONValue = ["layers": [["id": 0, "name": "Trees", "fields": [], "extent": ["spatialReference": ["wkid": 102100, "latestWkid": 3857]]]]]
        func defs(_ doc: JSONValue) -> SchemaDefinitions { SchemaDefinitions(service: [("service.json", doc)], webmap: nil, rules: nil) }
        #expect(Exporter.wkid(of: trees, definitions: defs(own)) == 3857)
        let root: JSONValue = ["spatialReference": ["wkid": 2913], "layers": [["id": 0, "name": "Trees", "fields": []]]]
        #expect(Exporter.wkid(of: trees, definitions: defs(root)) == 2913)
        #expect(Exporter.wkid(of: trees, definitions: defs(["layers": []])) == 4326)
        #expect(Exporter.wkid(of: species, definitions: defs(own)) == nil)
    }
}

extension ReplayExportTests {
    @Suite(.tags(.process)) struct ProcessTests {
        // Needs gdal-bin (.ci/run installs it); skipped, with this note, where ogrinfo is missing.
        @Test(.enabled(if: ogrinfo != nil, "ogrinfo (gdal-bin) is not installed: the GeoPackage is not checked by GDAL"))
        func ogrinfoReadsTheGeoPackage() throws {
            let tmp = TempPath()
            let (log, _) = try ReplayExportTests.logWithADeletion(tmp.path)
            let dir = ReplayExportTests.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let out = dir + "/live.gpkg"
            _ = try log.export(to: out)
            let r = try CLI.sh("'\(ReplayExportTests.ogrinfo!)' -al -so '\(out)'")
            #expect(r.status == 0, "\(r.stderr)")
            let text = r.stdout
            let blocks = text.components(separatedBy: "Layer name: ").dropFirst()
            var byName: [String: String] = [:]
            for b in blocks { byName[String(b.prefix { $0 != "\n" })] = b }
            #expect(Set(byName.keys) == ["Trees", "Neighborhoods", "Species", "Inspections"], "\(text)")
            for (name, id, geometry) in [("Trees", 0, "Point"), ("Neighborhoods", 1, "Polygon"), ("Species", 2, "None"), ("Inspections", 3, "None")] {
                let b = byName[name] ?? ""
                #expect(b.contains("Feature Count: \(try ReplayExportTests.liveCount(tmp.path, layer: id))"), "\(name): \(b)")
                #expect(b.contains("Geometry: \(geometry)"), "\(name): \(b)")
                #expect(b.contains("GlobalID: String"), "\(name): \(b)")
            }
            #expect(byName["Trees"]?.contains("DBH: Real") == true, "\(byName["Trees"] ?? "")")
            #expect(!r.stderr.contains("ERROR"), "\(r.stderr)")
            try ReplayExportTests.validateWithGDAL(out)
        }

        @Test func theCLIReplaysExportsAndCheckpoints() throws {
            let tmp = TempPath()
            let log = try ReplayExportTests.randomLog(at: tmp.path, seed: 5, steps: 60)
            defer { ReplayExportTests.removeCheckpoints(log) }
            let dir = ReplayExportTests.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let head = try log.eventCount()
            let p = head / 2
            log.close()
            #expect(try CLI.run("checkpoint", tmp.path, "--every", "\(p / 2)").status == 0)
            let r = try CLI.run("replay", tmp.path, "--as-of", "\(p)", "--out", dir + "/half.sqlite", "--json", "--digest")
            #expect(r.status == 0, "\(r.stderr)")
            let j = try JSONParser.parse(r.stdout)
            #expect(j["position"]?.intValue == p && j["checkpoint"]?.intValue == (p / (p / 2)) * (p / 2))
            let digest = try RawLog.read(dir + "/half.sqlite") { db in try Projections.digest(db).digest }
            let reference = try ReplayExportTests.digestOfPrefix(tmp.path, p)
            #expect(j["digest"]?.stringValue == digest && digest == reference)
            #expect(try CLI.run("replay", tmp.path, "--as-of", "\(p)", "--out", dir + "/half.sqlite").status == 67)
            #expect(try CLI.run("replay", tmp.path, "--as-of", "soon", "--out", dir + "/x.gpkg").status == 64)
            #expect(try CLI.run("replay", tmp.path, "--as-of", "\(head + 1)", "--out", dir + "/x.gpkg").status == 68)
            #expect(try CLI.run("export", tmp.path, "--out", dir + "/x.txt").status == 65)
            let e = try CLI.run("export", tmp.path, "--out", dir + "/live.gpkg", "--layer", "Trees")
            #expect(e.status == 0 && e.stdout.contains("Trees:"), "\(e.stderr)")
            #expect(try CLI.run("checkpoint", tmp.path, "--verify").status == 0)
        }
    }
}

extension ExportSpatialReferenceTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func webMercatorIsDefinedAndNamed() throws {
            let tmp = TempPath()
            let text = try String(contentsOfFile: Paths.trees + "/service.json", encoding: .utf8)
                .replacingOccurrences(of: "\"wkid\": 4326", with: "\"wkid\": 102100").replacingOccurrences(of: "\"latestWkid\": 4326", with: "\"latestWkid\": 3857")
            #expect(text.contains("102100"))
            let log = try EditLog.create(at: tmp.path, service: [("service.json", try JSONParser.parse(text))], baseline: try Fixture.baseline(),
                                         clock: StepClock(start: 1_780_000_000_000, step: 7), logId: "mercator")
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-export-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            _ = try log.export(to: dir + "/m.gpkg")
            try RawLog.read(dir + "/m.gpkg") { db in
                #expect(try Int.fetchAll(db, sql: "SELECT srs_id FROM gpkg_spatial_ref_sys ORDER BY srs_id") == [-1, 0, 3857, 4326])
                #expect(try String.fetchOne(db, sql: "SELECT definition FROM gpkg_spatial_ref_sys WHERE srs_id = 3857")?.contains("Pseudo-Mercator") == true)
                #expect(try Int.fetchAll(db, sql: "SELECT srs_id FROM gpkg_geometry_columns ORDER BY table_name") == [3857, 3857])
                let blob = try Data.fetchOne(db, sql: "SELECT geom FROM Trees LIMIT 1")!
                #expect([UInt8](blob)[4..<8] == [0x11, 0x0F, 0, 0][...], "srs_id 3857, little-endian")
            }
            _ = try log.export(to: dir + "/t.geojson", layers: ["Trees"])
            let fc = try JSONParser.parse(try String(contentsOfFile: dir + "/t.geojson", encoding: .utf8))
            #expect(fc["crs"]?["properties"]?["name"]?.stringValue == "urn:ogc:def:crs:EPSG::3857")
            if let ogrinfo = ReplayExportTests.ogrinfo {
                let r = try CLI.sh("'\(ogrinfo)' -so '\(dir)/m.gpkg' Trees")
                #expect(r.status == 0 && r.stdout.contains("Pseudo-Mercator") && r.stdout.contains("Geometry: Point"), "\(r.stdout)\(r.stderr)")
                try ReplayExportTests.validateWithGDAL(dir + "/m.gpkg")
            }
        }
    }
}
