import ArgumentParser
import EditLog
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The main job: build a Trees of Portland log, record a day of field sessions, and tell what happened.",
        discussion: """
            Creates the log at --db (or in a temporary directory), loads the baseline, records \
            Fixtures/trees-of-portland/scripts/*.ndjson in order, then tells the story: one tree's history, the sessions \
            that did not commit, the dataset as of a moment (a GeoPackage), a diff between two moments, two devices that \
            edit the same tree and exchange bundles (and the conflict), a hub served on 127.0.0.1 that a third device \
            syncs with, the report and verify. Every file goes to a temporary directory (printed); each step prints the \
            command that does it by hand.
            """)

    @Option(name: .long, help: "Where to write the log (default: a new temporary file).")
    var db: String?

    @Option(name: .long, help: "The Trees of Portland fixtures directory (default: Fixtures/trees-of-portland of this package).")
    var fixtures: String?

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let db, FileManager.default.fileExists(atPath: db) {
            throw ValidationError("--db \(db) already exists; the demo creates a new log (remove it or choose another path)")
        }
    }

    static func defaultFixtures() -> String? {
        var candidates = [FileManager.default.currentDirectoryPath + "/Fixtures/trees-of-portland"]
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(here.appendingPathComponent("Fixtures/trees-of-portland").path)
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/service.json") }
    }

    func run() async throws {
        try await handleErrors { try await perform() }
    }

    func perform() async throws {
        do {
            guard let dir = fixtures ?? Demo.defaultFixtures() else {
                throw EditLogError(.notFound, "cannot find Fixtures/trees-of-portland; pass --fixtures DIR")
            }
            let fm = FileManager.default
            let work = NSTemporaryDirectory() + "editlog-demo-\(UInt32.random(in: 0...UInt32.max))"
            do { try fm.createDirectory(atPath: work, withIntermediateDirectories: true) } catch {
                throw EditLogError(.io, "cannot create the demo's directory: \(error)", at: work)
            }
            let path = db ?? (work + "/device-a.sqlite")
            let baselineDir = dir + "/baseline"
            var baseline: [BaselineSet] = []
            for f in ((try? fm.contentsOfDirectory(atPath: baselineDir)) ?? []).filter({ $0.hasSuffix(".json") }).sorted() {
                baseline.append(BaselineSet(name: f, layer: nil, json: try InputFiles.json(baselineDir + "/" + f)))
            }
            let log = try EditLog.create(at: path, service: [("service.json", try InputFiles.json(dir + "/service.json"))],
                                         webmap: try InputFiles.json(dir + "/webmap.json"), rules: try InputFiles.rules(dir + "/rules.json"),
                                         baseline: baseline, actor: "portland_parks", device: "import")
            defer { log.close() }
            let quiet = output.json
            func say(_ s: String) { if !quiet { out(s) } }
            say("EditLog demo — Trees of Portland")
            say("log \(path) (id \(log.logId)); the demo's other files go to \(work)")
            let loaded = baseline.map { b in "\(b.name.replacingOccurrences(of: ".json", with: "")) \(b.json["features"]?.arrayValue?.count ?? 0)" }
            say("baseline: \(loaded.joined(separator: ", ")) → \(try log.eventCount()) events\n")

            let scriptsDir = dir + "/scripts"
            let scripts = ((try? fm.contentsOfDirectory(atPath: scriptsDir)) ?? []).filter { $0.hasSuffix(".ndjson") }.sorted()
            var touched: [String: Int] = [:]
            var scriptResults: [JSONValue] = []
            var ends: [Int64] = [try log.lastPosition()]
            for s in scripts {
                let bytes = try InputFiles.bytes(scriptsDir + "/" + s)
                let commands: [ScriptCommand]
                do throws(EditLogError) { commands = try ScriptParser.parse(bytes) } catch { throw error.at(s) }
                let r: RecordResult
                do throws(EditLogError) { r = try log.record(commands, name: s, sha256: InputFiles.sha256(bytes)) } catch { throw error.at(s) }
                let actors = Set(commands.map(\.actor)).sorted()
                let count = { (t: String) in r.events.filter { $0.type == t }.count }
                for e in r.events where e.stream.hasPrefix("0:") {
                    switch try e.body {
                    case .sessionCommitted(let c): touched[c.globalId, default: 0] += 1
                    case .featureDerived(let d): touched[d.globalId, default: 0] += 1
                    default: break
                    }
                }
                say("• \(s): \(actors.joined(separator: ", ")) — \(commands.count) steps → \(r.events.count) events; committed \(count("SessionCommitted")), canceled \(count("SessionCanceled")), abandoned \(count("SessionAbandoned")), rule updates \(count("FeatureDerived")), deletions \(count("FeatureDeleted")), photos \(count("AttachmentStaged"))")
                scriptResults.append(["script": .string(s), "events": .int(Int64(r.events.count))])
                ends.append(try log.lastPosition())
            }
            say("  (one script by hand: editlog record \(path) \(scriptsDir)/\(scripts.first ?? "SCRIPT.ndjson"))")

            // The tree with the richest story.
            let tree = touched.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.first?.key
            var historyJSON: JSONValue = .null
            if let tree {
                let (layer, entries) = try log.history(globalId: tree)
                let story = entries.filter { $0.cause != "baseline" }
                let shown = try log.show(globalId: tree)
                say("\nHistory of tree \(tree) (\(short(shown["attributes"]?["Address"] ?? .null, 60)), \(short(shown["attributes"]?["Neighborhood"] ?? .null))):")
                say("  $ editlog history \(path) '\(tree)'")
                say(historyTable(story, layer: layer, log: log, clock: .default))
                historyJSON = .object(["globalId": .string(tree), "entries": .array(story.map(\.json))])
            }
            let canceled = try log.sessions(status: "canceled") + log.sessions(status: "abandoned") + log.sessions(status: "open")
            if !canceled.isEmpty {
                say("\nSessions that did not commit (kept for auditors):")
                say("  $ editlog sessions \(path) --status canceled")
                for s in canceled {
                    let st = s.state
                    let staged = st.staged.map { "\(short(.string($0.field)))=\(short($0.value, 16))" }
                    let atts = st.attachmentsAdded.map { "photo \(short(.string($0.name)))" }
                    say("  \(st.status.rawValue) \(short(.string(st.id))) by \(st.actor) on \(short(.string(st.globalId), 40)): \((staged + atts).joined(separator: ", "))")
                }
            }
            var story = DemoStory(log: log, path: path, dir: work, fixtures: dir, say: say)
            // A moment halfway through the day: after the middle script.
            let middle = ends[ends.count / 2], head = try log.lastPosition()
            try story.replayAsOf(middle, label: "after \(scripts.isEmpty ? "the baseline" : scripts[max(0, ends.count / 2 - 1)])")
            try story.diff(from: middle, to: head)
            if let tree {
                try story.twoDevices(tree: tree)
                try await story.hubAndSync(tree: tree)
                try await story.fieldAdded(tree: tree)
                try await story.historicMoment(tree: tree, at: "2026-06-02T12:30:00Z")
            }
            try story.report()
            let stats = try log.stats()
            let report = try log.verify()
            story.section("Verify")
            story.command("verify \(path)")
            let sessions = (stats["sessions"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { "\($0.value.intValue ?? 0) \($0.key)" }.joined(separator: ", ")
            say("  \(stats["events"]?.intValue ?? 0) events; sessions: \(sessions); actors \((stats["actors"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", ")); \(stats["attachments"]?.intValue ?? 0) attachments (\(stats["blobBytes"]?.intValue ?? 0) bytes)")
            say("  verify: \(report.ok ? "ok" : "FAILED") — chain head \(report.headHash)\(report.projectionsChecked ? ", projections equal a rebuild" : "")")
            say("\nExplore: editlog log \(path) · editlog blame \(path) '\(tree ?? "<globalId>")' · editlog show \(path) '\(tree ?? "<globalId>")'")
            if output.json {
                out(JSONValue.object(["path": .string(path), "dir": .string(work), "logId": .string(log.logId), "scripts": .array(scriptResults), "history": historyJSON,
                                      "story": .object(story.json), "stats": stats, "verify": report.json]).serialized())
            }
            if !report.ok { throw EditLogError(.corrupt, "verification failed: \(report.problems.first ?? "")") }
        }
    }
}
