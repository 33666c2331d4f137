import EditLog
import Foundation
import GRDB
import Testing

enum Paths {
    /// The package root, from this file's path.
    static let root: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let trees = root + "/Fixtures/trees-of-portland"
    /// Esri's REST payloads (Apache-2.0), vendored unchanged from ../shared/fixtures/arcgis-rest so a clean clone
    /// anywhere runs the contract tests; Fixtures/arcgis-rest/SOURCES.txt names each file's origin.
    static let arcgisRest = root + "/Fixtures/arcgis-rest"
    /// The shared originals, when the clone sits beside them.
    static let sharedArcgisRest = URL(fileURLWithPath: root).deletingLastPathComponent().appendingPathComponent("shared/fixtures/arcgis-rest").path
    static var editlogBinary: String { root + "/.build/debug/editlog" }
}

/// A temporary file path removed (with its WAL files) when the value is released.
final class TempPath {
    let path: String
    init(_ name: String = "log") {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-test-\(UUID().uuidString)-\(name).sqlite").path
    }
    deinit {
        for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) }
    }
}

enum Fixture {
    static func json(_ rel: String) throws -> JSONValue { try InputFiles.json(Paths.trees + "/" + rel) }

    static func baseline() throws -> [BaselineSet] {
        try ["Species", "Neighborhoods", "Trees", "Inspections"].map {
            BaselineSet(name: "\($0).json", layer: nil, json: try json("baseline/\($0).json"))
        }
    }

    /// A Trees of Portland log with the baseline, deterministic clock and ids.
    static func treesLog(at path: String, baseline: Bool = true, seed: UInt64 = 1, logId: String = "test-log",
                         clockStart: Int64 = 1_780_000_000_000, clock shared: StepClock? = nil) throws -> EditLog {
        let clock = shared ?? StepClock(start: clockStart, step: 7)
        return try EditLog.create(
            at: path, service: [("service.json", try json("service.json"))], webmap: try json("webmap.json"),
            rules: try InputFiles.rules(Paths.trees + "/rules.json"), baseline: baseline ? try self.baseline() : [],
            clock: clock, ids: UUIDv7Generator(clock: clock, seed: seed), logId: logId)
    }

    static func features(_ layer: String) throws -> [[String: JSONValue]] {
        try (json("baseline/\(layer).json")["features"]?.arrayValue ?? []).compactMap { $0["attributes"]?.objectValue }
    }

    static func globalIds(_ layer: String) throws -> [String] {
        try features(layer).compactMap { $0["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
    }

    /// A tree with no inspections, and one with some.
    static func treeWithoutInspections() throws -> String {
        let inspected = Set(try features("Inspections").compactMap { $0["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) })
        return try globalIds("Trees").first { !inspected.contains($0) }!
    }

    static func treeWithInspections() throws -> (tree: String, inspections: [String]) {
        try treesWithInspections()[0]
    }

    /// The trees that have inspections, those with the most first (then by GlobalID).
    static func treesWithInspections() throws -> [(tree: String, inspections: [String])] {
        var byTree: [String: [String]] = [:]
        for f in try features("Inspections") {
            if let t = f["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize), let g = f["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) {
                byTree[t, default: []].append(g)
            }
        }
        return byTree.sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}

/// Builds script commands from JSON lines.
func script(_ lines: [String], actor: String = "tester") throws -> [ScriptCommand] {
    try ScriptParser.parse(Array(lines.joined(separator: "\n").utf8), defaultActor: actor, defaultDevice: "test-device")
}

extension EditLog {
    /// Records lines as one script (unique name each time).
    @discardableResult
    func run(_ lines: String..., actor: String = "tester") throws -> [RecordedEvent] {
        let cmds = try script(lines, actor: actor)
        return try record(cmds, name: "test", sha256: InputFiles.sha256(Array(lines.joined(separator: "\n").utf8)), allowRepeat: true).events
    }

    /// Records lines and expects a rejection; returns the error.
    func reject(_ lines: String..., actor: String = "tester") throws -> EditLogError {
        let cmds = try script(lines, actor: actor)
        let before = try eventCount()
        do {
            _ = try record(cmds, name: "test", sha256: InputFiles.sha256(Array(lines.joined(separator: "\n").utf8)), allowRepeat: true)
        } catch {
            #expect(try eventCount() == before, "a rejected script must write nothing")
            return error
        }
        Issue.record("expected the script to be rejected")
        return EditLogError(.io, "not rejected")
    }

    func attributes(_ gid: String) throws -> [String: JSONValue] {
        try show(globalId: gid)["attributes"]?.objectValue ?? [:]
    }

    func projectionDigest() throws -> String {
        try digestOfProjections()
    }
}

func newGID(_ n: Int) -> String {
    String(format: "{00000000-0000-4000-8000-%012X}", n)
}

/// Reads a log's SQLite file directly, with its own read-only connection: tests that check what is
/// on disk do not go through the facade they are checking.
enum RawLog {
    static func read<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var config = Configuration()
        config.readonly = true
        let q = try DatabaseQueue(path: path, configuration: config)
        defer { try? q.close() }
        return try q.read(body)
    }

    /// A write through a connection of the test's own (the facade keeps GRDB to itself): tampering, checkpoints.
    static func write<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        let q = try DatabaseQueue(path: path)
        defer { try? q.close() }
        return try q.write(body)
    }

    static func writeWithoutTransaction<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        let q = try DatabaseQueue(path: path)
        defer { try? q.close() }
        return try q.writeWithoutTransaction(body)
    }

    static func count(_ path: String, type: String) throws -> Int {
        try read(path) { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE type = ?", arguments: [type]) ?? 0 }
    }

    /// Event ids in position order, as their 16 stored bytes.
    static func ids(_ path: String) throws -> [[UInt8]] {
        try read(path) { db in try Data.fetchAll(db, sql: "SELECT id FROM events ORDER BY position").map { Array($0) } }
    }
}

extension NewEvent {
    /// An event whose payload is written as given, not through its type's codec (store tests, malformed payloads).
    init(id: UUID, stream: String, type: EventType, payload: JSONValue, context: EventContext, session: String?, cause: String) {
        self.init(id: id, stream: stream, body: .unknown(type: type.rawValue, payload: payload), context: context, session: session, cause: cause)
    }
}
