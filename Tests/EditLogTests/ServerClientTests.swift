import EditLog
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `editlog serve` as a subprocess on 127.0.0.1 (a free port the server picks and prints), read by real
/// ArcGIS clients: GDAL's ESRIJSON driver and esridump. Each is skipped, with the reason, where the client
/// is not installed (.ci/run installs gdal-bin and esridump).
@Suite("Feature service with real clients", .serialized)
struct ServerClientTests {
    static let ogr2ogr: String? = ["/usr/bin/ogr2ogr", "/usr/local/bin/ogr2ogr"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let ogrinfo: String? = ["/usr/bin/ogrinfo", "/usr/local/bin/ogrinfo"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let esridump: Bool = (try? CLI.sh("python3 -c 'import esridump' 2>/dev/null").status) == 0

    /// Whether python3 can import `module` (a real client's package from PyPI).
    static func pythonHas(_ module: String) -> Bool {
        (try? CLI.sh("python3 -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(\"\(module)\") else 1)' 2>/dev/null").status) == 0
    }

    /// A served fixture log: the process, its base URL and the temporary files, all removed at the end.
    final class Served {
        let temp = TempPath("served")
        let dir: String
        let process: Process
        let base: String

        /// The log the commands read: the file, or the hub's `postgres://` URL.
        let db: String
        /// For a hub: the replica the commands read through (not the node's own).
        let cacheArgs: [String]

        /// `users`: names `editlog users add` gives a users file that `serve --users` reads (passwords: `password(for:)`).
        /// `hub`: a `postgres://` URL of an empty database: `hub init` makes the Trees of Portland hub there, and the
        /// server is a node of it (its replica in a cache of its own). `prepare` records on the fixture log before it is served.
        init(maxRecordCount: Int, users: [String] = [], hub: String? = nil, prepare: ((EditLog) throws -> Void)? = nil) throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-serve-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var store: [String]
            if let hub {
                let f = Paths.trees
                let inputs = ["--service", f + "/service.json", "--webmap", f + "/webmap.json", "--rules", f + "/rules.json", "--data"]
                    + ["Species", "Neighborhoods", "Trees", "Inspections"].map { f + "/baseline/\($0).json" }
                let r = try CLI.run(["hub", "init", hub] + inputs)
                guard r.status == 0 else { throw EditLogError(.io, "hub init failed: \(r.stderr)") }
                db = hub
                cacheArgs = ["--cache", dir + "/cli-cache"]
                store = [hub, "--cache", dir + "/node-cache"]
            } else {
                let log = try Fixture.treesLog(at: temp.path)
                defer { log.close() }
                try prepare?(log)
                db = temp.path
                cacheArgs = []
                store = [temp.path]
            }
            try "tok-client-0001 gdal_user\ntok-arcgis-0002 arcgis_user\n".write(toFile: dir + "/tokens", atomically: true, encoding: .utf8)
            var login: [String] = []
            if !users.isEmpty {
                // `editlog users add` reads each password from stdin (here a file: never a command line).
                for name in users {
                    try Self.password(for: name).write(toFile: dir + "/password-\(name)", atomically: true, encoding: .utf8)
                    let r = try CLI.sh("'\(CLI.binary)' users add '\(dir)/users' \(name) < '\(dir)/password-\(name)'")
                    guard r.status == 0 else { throw EditLogError(.io, "users add failed: \(r.stderr)") }
                }
                login = ["--users", dir + "/users"]
            }
            let (p, out, _) = try CLI.start(["serve"] + store + ["--port", "0", "--name", "Trees", "--anonymous-reads",
                                             "--token-file", dir + "/tokens", "--max-record-count", String(maxRecordCount)] + login)
            process = p
            // The first line names the URL with the port the server bound.
            let found = Unchecked(Box())
            let ready = DispatchSemaphore(value: 0)
            let handle = out.fileHandleForReading
            DispatchQueue.global().async {
                var text = ""
                while true {
                    let d = handle.availableData
                    if d.isEmpty { break }
                    text += String(decoding: d, as: UTF8.self)
                    if let line = text.split(separator: "\n").first(where: { $0.contains("serving http://") }) {
                        found.value.url = String(line.split(separator: " ").last ?? "")
                        break
                    }
                }
                ready.signal()
            }
            guard ready.wait(timeout: .now() + 60) == .success, let url = found.value.url else {
                p.terminate()
                throw EditLogError(.io, "editlog serve did not start")
            }
            base = url
        }

        /// The `--no-baseline` history entries of a feature of the served log.
        func history(_ gid: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [JSONValue] {
            let h = try cli(["history", db, gid, "--json", "--no-baseline"])
            #expect(h.status == 0, "\(h.stderr)", sourceLocation: sourceLocation)
            return try JSONParser.parse(h.stdout)["entries"]?.arrayValue ?? []
        }

        /// Runs a Python client script from `tools/` against this server with `token`, and returns the JSON it printed
        /// on its last line that starts with `marker` (its result).
        /// A command on the served log (`args` name it as `db`), through its own replica for a hub.
        func cli(_ args: [String]) throws -> CLI.Result { try CLI.run(args + cacheArgs) }

        static func password(for name: String) -> String { "pw-\(name)-2026\n" }

        /// `token` is a token of the token file, or `login:NAME` for a client that logs in as NAME (its password in
        /// the file EDITLOG_PASSWORD_FILE names).
        func runClient(_ script: String, token: String, marker: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
            let env = token.hasPrefix("login:") ? "EDITLOG_PASSWORD_FILE='\(dir)/password-\(token.dropFirst(6))' " : ""
            let r = try CLI.sh("\(env)python3 '\(Paths.root)/tools/\(script)' '\(base)' \(token) '\(dir)' 2>&1")
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)", sourceLocation: sourceLocation)
            let line = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix(marker + " ") }, "\(r.stdout)", sourceLocation: sourceLocation)
            return try JSONParser.parse(String(line.dropFirst(marker.count + 1)))
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    final class Box: @unchecked Sendable { var url: String? }
}

extension ServerClientTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test(.enabled(if: ogr2ogr != nil && ogrinfo != nil, "ogr2ogr/ogrinfo (gdal-bin) are not installed: GDAL's ESRIJSON driver is not tried"))
        func gdalPagesThroughALayerLargerThanMaxRecordCountIntoGeoJSONAndGeoPackage() throws {
            let served = try Served(maxRecordCount: 50)
            let url = "ESRIJSON:\(served.base)/0/query?where=1%3D1&outFields=*&orderByFields=OBJECTID&f=json"
            let out = served.dir + "/trees.geojson"
            let r = try CLI.sh("'\(ServerClientTests.ogr2ogr!)' -f GeoJSON '\(out)' '\(url)' 2>&1")
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let fc = try JSONParser.parse(try String(contentsOfFile: out, encoding: .utf8))
            let ids = fc["features"]?.arrayValue?.compactMap { $0["properties"]?["OBJECTID"]?.intValue } ?? []
            #expect(ids.count == 240, "GDAL read \(ids.count) features")
            #expect(Set(ids) == Set(1...240))
            // …and into a GeoPackage: every feature, counted by ogrinfo reading the file back.
            let gpkg = served.dir + "/trees.gpkg"
            let g = try CLI.sh("'\(ServerClientTests.ogr2ogr!)' -f GPKG '\(gpkg)' '\(url)' -nln trees 2>&1")
            #expect(g.status == 0, "\(g.stdout)\(g.stderr)")
            let counted = try CLI.sh("'\(ServerClientTests.ogrinfo!)' -ro -so '\(gpkg)' trees 2>&1")
            #expect(counted.stdout.contains("Feature Count: 240"), "\(counted.stdout)")
            let distinct = try CLI.sh("'\(ServerClientTests.ogrinfo!)' -ro -q '\(gpkg)' -sql 'SELECT COUNT(DISTINCT OBJECTID) AS n, MIN(OBJECTID) AS lo, MAX(OBJECTID) AS hi FROM trees' 2>&1")
            #expect(distinct.stdout.contains("n (Integer) = 240"), "\(distinct.stdout)")
            #expect(distinct.stdout.contains("lo (Integer) = 1") && distinct.stdout.contains("hi (Integer) = 240"), "\(distinct.stdout)")
            let info = try CLI.sh("'\(ServerClientTests.ogrinfo!)' -ro -al -so '\(url)' 2>&1")
            #expect(info.status == 0, "\(info.stdout)")
            #expect(info.stdout.contains("Geometry: Point"), "\(info.stdout)")
            #expect(info.stdout.contains("Condition: String"), "\(info.stdout)")
        }

        @Test(.enabled(if: esridump, "esridump (PyPI) is not installed: it is not tried"))
        func esridumpDumpsTheLayer() throws {
            let served = try Served(maxRecordCount: 50)
            let out = served.dir + "/dump.geojson"
            let script = """
                import json, sys
                from esridump.dumper import EsriDumper
                features = list(EsriDumper(sys.argv[1], paginate_oid=len(sys.argv) > 3))
                json.dump({"type": "FeatureCollection", "features": features}, open(sys.argv[2], "w"))
                """
            try script.write(toFile: served.dir + "/dump.py", atomically: true, encoding: .utf8)
            let r = try CLI.sh("python3 '\(served.dir)/dump.py' '\(served.base)/0' '\(out)' 2>&1")
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let fc = try JSONParser.parse(try String(contentsOfFile: out, encoding: .utf8))
            let features = fc["features"]?.arrayValue ?? []
            #expect(features.count == 240)
            #expect(Set(features.compactMap { $0["properties"]?["OBJECTID"]?.intValue }) == Set(1...240))
            #expect(features.first?["geometry"]?["type"] == "Point")
            // --paginate-oid: pages by ObjectID ranges in `where` instead of resultOffset.
            let byOid = try CLI.sh("python3 '\(served.dir)/dump.py' '\(served.base)/0' '\(served.dir)/oid.geojson' paginate-oid 2>&1")
            #expect(byOid.status == 0, "\(byOid.stdout)\(byOid.stderr)")
            let oidFeatures = try JSONParser.parse(try String(contentsOfFile: served.dir + "/oid.geojson", encoding: .utf8))["features"]?.arrayValue ?? []
            #expect(oidFeatures.count == 240)
            #expect(Set(oidFeatures.compactMap { $0["properties"]?["OBJECTID"]?.intValue }) == Set(1...240))
            let tables = try CLI.sh("python3 '\(served.dir)/dump.py' '\(served.base)/2' '\(served.dir)/species.geojson' 2>&1")
            #expect(tables.status == 0, "\(tables.stdout)")
        }

        /// The binary over HTTP (no client to install): an edit with the token file's token, then `editlog history`
        /// names its user and the client's User-Agent.
        @Test func serveRecordsEditsAsTheTokensUser() async throws {
            let served = try Served(maxRecordCount: 1000)
            var request = URLRequest(url: URL(string: "\(served.base)/0/applyEdits")!)
            request.httpMethod = "POST"
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer tok-client-0001", forHTTPHeaderField: "X-Esri-Authorization")
            request.setValue("FieldApp/2.0", forHTTPHeaderField: "User-Agent")
            request.httpBody = Data(formEncode([("updates", #"[{"attributes":{"OBJECTID":1,"Condition":"Poor"}}]"#), ("f", "json")]).utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            let r = try JSONParser.parse(Array(data))
            #expect(r["updateResults"]?.arrayValue?.first?["success"] == true, "\(r.serialized())")
            let gid = try #require(try Fixture.features("Trees").first?["GlobalID"]?.stringValue)
            let history = try served.cli(["history", served.db, gid, "--json", "--no-baseline"])
            #expect(history.status == 0, "\(history.stderr)")
            let entries = try JSONParser.parse(history.stdout)["entries"]?.arrayValue ?? []
            #expect(entries.contains { $0["field"] == "Condition" && $0["new"] == "Poor" && $0["actor"] == "gdal_user" && $0["device"] == "FieldApp/2.0" }, "\(history.stdout)")
            // Refused as ArcGIS Server refuses: HTTP 200, code 499 in the body.
            let anonymous = try await URLSession.shared.data(from: URL(string: "\(served.base)/0/applyEdits?deletes=1&f=json")!)
            #expect((anonymous.1 as? HTTPURLResponse)?.statusCode == 200)
            #expect(try JSONParser.parse(Array(anonymous.0))["error"]?["code"] == 499)
        }
    }
}
