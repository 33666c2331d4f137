import EditLog
import EditLogProjections
import Foundation
import GRDB
import Testing

/// The "Done when" of the replay and audit issue on the demo log (`editlog demo`): GeoPackages replayed at
/// three moments read by GDAL with the right counts, and pygeodiff (PyPI, pinned in .ci/run) diffing two
/// replays to the same per-table counts as `editlog diff` between the same positions.
@Suite(.serialized) struct GeoDiffPeerTests {
    /// The demo log, made once by the real binary (`editlog demo --db`), and the positions where its scripts end.
    static let demo: (path: String, ends: [String: Int64])? = {
        guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { return nil }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-geodiff-\(UUID().uuidString).sqlite").path
        guard let r = try? CLI.run("demo", "--db", path, "--json"), r.status == 0 else { return nil }
        var ends: [String: Int64] = [:]
        try? RawLog.read(path) { db in
            ends["baseline end"] = try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM events WHERE type = 'FeatureBaselined'")
            for row in try Row.fetchAll(db, sql: "SELECT position, payload FROM events WHERE type = 'ScriptRecorded' ORDER BY position") {
                let payload: String = row[1]
                if let m = payload.range(of: #"\d\d-[a-z-]+\.ndjson"#, options: .regularExpression) {
                    ends[String(payload[m].dropLast(7))] = row[0]
                }
            }
            // The head before the demo adds Trees.Notes (a schema change): pygeodiff compares two GeoPackages of one
            // schema, and refuses a table whose columns differ.
            ends["head"] = try Int64.fetchOne(db, sql: "SELECT COALESCE(MIN(position) - 1, (SELECT MAX(position) FROM events)) FROM events WHERE type = 'SchemaChanged'")
        }
        return (path, ends)
    }()

    static func demoLog() throws -> (path: String, ends: [String: Int64]) {
        try #require(demo, "the demo log could not be made with \(CLI.binary) (build the editlog product first)")
    }

    static func tempDir() -> String { ReplayExportTests.tempDir() }

    /// Live rows per layer id of a rebuild of the first `p` events (independent of replay and checkpoints).
    static func liveCounts(_ path: String, through p: Int64) throws -> [Int: Int] {
        let memory = try DatabaseQueue()
        try memory.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [path])
            try db.execute(sql: "CREATE TABLE events AS SELECT * FROM src.events WHERE position <= ?", arguments: [p])
            try db.execute(sql: "DETACH DATABASE src")
        }
        return try memory.write { db in
            try Projections.rebuild(db)
            var out: [Int: Int] = [:]
            for id in 0..<4 { out[id] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM p_layer_\(id) WHERE _deleted = 0") }
            return out
        }
    }

    static let layers = [("Trees", 0), ("Neighborhoods", 1), ("Species", 2), ("Inspections", 3)]

    /// python3 can import pygeodiff (.ci/run installs the pinned version).
    static let pygeodiff: Bool = (try? CLI.sh("python3 -c 'import pygeodiff'"))?.status == 0

    /// pygeodiff's changeset between two GeoPackages: its per-table summary (insert, update, delete) and, for each
    /// updated row, its GlobalID and the columns whose value changed.
    static let geodiffScript = """
        import json, sqlite3, sys, pygeodiff
        a, b, changeset, listing = sys.argv[1:5]
        g = pygeodiff.GeoDiff()
        g.create_changeset(a, b, changeset)
        g.list_changes_summary(changeset, listing + ".summary")
        g.list_changes(changeset, listing)
        summary = {t["table"]: [t["insert"], t["update"], t["delete"]] for t in json.load(open(listing + ".summary"))["geodiff_summary"]}
        db = sqlite3.connect(b)
        updated = {}
        for e in json.load(open(listing))["geodiff"]:
            if e["type"] != "update":
                continue
            t = e["table"]
            cols = [r[1] for r in db.execute('PRAGMA table_info("%s")' % t)]
            pk = next(c["old"] for c in e["changes"] if c["column"] == 0)
            gid = db.execute('SELECT "%s" FROM "%s" WHERE "%s" = ?' % (cols[1], t, cols[0]), (pk,)).fetchone()[0]
            updated.setdefault(t, {})[gid] = sorted(cols[c["column"]] for c in e["changes"] if "new" in c)
        print(json.dumps({"summary": summary, "updated": updated}))
        """
}

extension GeoDiffPeerTests {
    @Suite(.tags(.process)) struct ProcessTests {
        // Needs gdal-bin (.ci/run installs it).
        @Test(.enabled(if: ReplayExportTests.ogrinfo != nil, "ogrinfo (gdal-bin) is not installed: the replayed GeoPackages are not checked by GDAL"))
        func replaysAtThreeMomentsAreGeoPackagesGDALReadsWithTheRightCounts() throws {
            let (path, ends) = try GeoDiffPeerTests.demoLog()
            let dir = GeoDiffPeerTests.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var seen: [[Int: Int]] = []
            for moment in ["baseline end", "03-maintenance", "head"] {
                let p = try #require(ends[moment], "\(moment) in \(ends)")
                let out = "\(dir)/at-\(p).gpkg"
                let r = try CLI.run("replay", path, "--as-of", "\(p)", "--out", out)
                #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
                let info = try CLI.sh("'\(ReplayExportTests.ogrinfo!)' -al -so '\(out)'")
                #expect(info.status == 0 && !info.stderr.contains("ERROR"), "\(info.stderr)")
                var byName: [String: String] = [:]
                for b in info.stdout.components(separatedBy: "Layer name: ").dropFirst() { byName[String(b.prefix { $0 != "\n" })] = b }
                let expected = try GeoDiffPeerTests.liveCounts(path, through: p)
                for (name, id) in GeoDiffPeerTests.layers {
                    #expect(byName[name]?.contains("Feature Count: \(expected[id]!)\n") == true, "\(moment) (position \(p)) \(name): \(byName[name] ?? "missing")")
                }
                try ReplayExportTests.validateWithGDAL(out)
                seen.append(expected)
            }
            // The three moments differ (trees planted, then removed), so the counts prove something.
            #expect(Set(seen.map { $0[0]! }).count == 3, "\(seen)")
        }

        /// pygeodiff compares rows; `editlog diff` names every feature whose row differs too, editor tracking included (a
        /// commit that changed no value moves EditDate and Editor, as ArcGIS does: a `trackingOnly` entry), and an
        /// attachment change moves the row's editor tracking. So inserts, deletes and updates are the same features
        /// with the same fields (the diff's `@attachment:` fields aside).
        @Test(.enabled(if: pygeodiff, "python3 cannot import pygeodiff (python3 -m pip install pygeodiff==2.3.2; .ci/run installs it)"),
              arguments: [("baseline end", "03-maintenance"), ("03-maintenance", "head"), ("05-cancel-and-abandon", "07-removals"), ("baseline end", "head")])
        func pygeodiffOfTwoReplaysCountsWhatEditlogDiffLists(window: (String, String)) throws {
            let (path, ends) = try GeoDiffPeerTests.demoLog()
            let from = try #require(ends[window.0]), to = try #require(ends[window.1])
            let dir = GeoDiffPeerTests.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            for p in [from, to] {
                let r = try CLI.run("replay", path, "--as-of", "\(p)", "--out", "\(dir)/\(p).gpkg")
                #expect(r.status == 0, "\(r.stderr)")
            }
            try Data(GeoDiffPeerTests.geodiffScript.utf8).write(to: URL(fileURLWithPath: dir + "/geodiff.py"))
            let g = try CLI.sh("python3 '\(dir)/geodiff.py' '\(dir)/\(from).gpkg' '\(dir)/\(to).gpkg' '\(dir)/changes.bin' '\(dir)/changes.json'")
            #expect(g.status == 0, "\(g.stderr)")
            let theirs = try JSONParser.parse(g.stdout)

            let d = try CLI.run("diff", path, "\(from)", "\(to)", "--format", "json")
            #expect(d.status == 0, "\(d.stderr)")
            var counts: [String: [Int64]] = [:]
            var updated: [String: [String: Set<String>]] = [:]  // layer → GlobalID → fields changed
            for c in try JSONParser.parse(d.stdout)["changes"]?.arrayValue ?? [] {
                let layer = try #require(c["layer"]?.stringValue), kind = try #require(c["change"]?.stringValue)
                counts[layer, default: [0, 0, 0]][["added": 0, "updated": 1, "deleted": 2][kind]!] += 1
                if kind == "updated" { updated[layer, default: [:]][try #require(c["globalId"]?.stringValue)] = Set(c["fields"]?.objectValue?.keys.map { $0 } ?? []) }
            }
            #expect(!counts.isEmpty, "\(window): an empty window proves nothing")
            let schema = try EditLog.open(at: path, readonly: true).schema
            for (name, _) in GeoDiffPeerTests.layers {
                _ = try #require(schema.layer(name))
                let ours = counts[name] ?? [0, 0, 0]
                let summary = theirs["summary"]?[name]?.arrayValue?.compactMap(\.intValue) ?? [0, 0, 0]
                #expect(summary[0] == ours[0] && summary[2] == ours[2], "\(window) \(name): pygeodiff insert/update/delete \(summary), editlog diff added/updated/deleted \(ours)")
                var theirUpdates: [String: Set<String>] = [:]
                for (gid, cols) in theirs["updated"]?[name]?.objectValue ?? [:] { theirUpdates[gid] = Set(cols.arrayValue?.compactMap(\.stringValue) ?? []) }
                #expect(Int64(theirUpdates.count) == summary[1])
                let ourUpdates = updated[name] ?? [:]
                // The same features with the same fields changed, editor tracking included.
                let ourFields = ourUpdates.mapValues { $0.filter { !$0.hasPrefix("@attachment:") } }.filter { !$0.value.isEmpty }
                #expect(theirUpdates == ourFields, "\(window) \(name): pygeodiff \(theirUpdates), editlog diff \(ourFields)")
            }
        }
    }
}
