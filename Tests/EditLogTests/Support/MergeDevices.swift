import EditLog
import Foundation
import Testing

/// Devices for the merge tests (`Merge*Tests`, and the bundle tests that merge): logs made from the same fixtures,
/// the sessions they record, and the exchange of their events through the import.
enum MergeDevices {
    /// Carries every event of `from` (and the blobs they reference) to `to`: in a change bundle (exported to a file,
    /// imported from it, as devices exchange them), or directly through the import API the bundle import uses
    /// (a debug build writes bundles slowly; the property test runs most seeds directly).
    @discardableResult
    static func exchange(_ from: EditLog, into to: EditLog, policy: MergePolicy = .lastInWins, viaBundle: Bool = true) throws -> ImportReport {
        guard viaBundle else {
            let events = try from.events()
            var shas = Set<String>()
            for e in events where e.type == EventType.attachmentStaged.rawValue { if let s = e.payload["sha256"]?.stringValue { shas.insert(s) } }
            return try to.importEvents(policy: policy, actor: "operator", device: "test", source: "test:\(from.logId)") { event, blob in
                for e in events { try event(e) }
                for s in shas.sorted() { if let b = try from.blob(sha256: s) { try blob(b) } }
            }
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-merge-\(UUID().uuidString).bundle").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try from.exportBundle(to: file)
        return try to.importBundle(at: file, policy: policy, actor: "operator", device: "test").report
    }

    /// A device log made from the fixtures. Devices of one test share a clock (devices whose clocks agree, as
    /// last-in-wins by client time assumes), unless `clock` is nil.
    static func device(_ name: String, _ tmp: TempPath, seed: UInt64, baseline: Bool = true, clock: StepClock? = nil) throws -> EditLog {
        try Fixture.treesLog(at: tmp.path, baseline: baseline, seed: seed, logId: "log-\(name)", clockStart: 1_780_000_000_000 + Int64(seed), clock: clock)
    }

    static let tree = "{32F8DBAB-B462-43E8-9C41-8A83EB04159C}"

    static func set(_ log: EditLog, _ gid: String, _ fields: [(String, String)], at minute: Int, actor: String, session: String) throws {
        var lines = [#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"\#(session)","actor":"\#(actor)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#]
        for (f, v) in fields { lines.append(#"{"op":"set","field":"\#(f)","value":\#(v),"session":"\#(session)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):10Z"}"#) }
        lines.append(#"{"op":"finish","session":"\#(session)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):20Z"}"#)
        for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
    }

    /// Re-points `inspection` to `tree` in one session.
    static func relate(_ log: EditLog, _ inspection: String, to tree: String, at minute: Int, actor: String) throws {
        let at = "2026-06-20T10:\(String(format: "%02d", minute)):00Z"
        let lines = [
            #"{"op":"edit","layer":"Inspections","globalId":"\#(inspection)","session":"\#(actor)-r\#(minute)","at":"\#(at)"}"#,
            #"{"op":"relate","relationship":"Tree_Inspections","globalId":"\#(tree)","at":"\#(at)"}"#,
            #"{"op":"finish","at":"\#(at)"}"#,
        ]
        for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
    }

    static func delete(_ log: EditLog, _ layer: String, _ g: String, at minute: Int, actor: String) throws {
        for cmd in try script([#"{"op":"delete","layer":"\#(layer)","globalId":"\#(g)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#], actor: actor) {
            try log.apply(cmd)
        }
    }

    /// Where two logs' data differ (for a failing convergence).
    static func differences(_ logs: [EditLog]) throws -> String {
        var out: [String] = []
        for layer in ["Trees", "Inspections", "Species"] {
            let sets = try logs.map { log -> [String: JSONValue] in
                var m: [String: JSONValue] = [:]
                for f in try log.query(layer: layer)["features"]?.arrayValue ?? [] {
                    var a = f["attributes"]?.objectValue ?? [:]
                    for k in ["OBJECTID", "CreationDate", "Creator", "EditDate", "Editor"] { a[k] = nil }
                    if let g = a["GlobalID"]?.stringValue { m[g] = .object(a) }
                }
                return m
            }
            for g in Set(sets.flatMap(\.keys)).sorted() where sets.contains(where: { $0[g] != sets[0][g] }) {
                out.append("\(layer) \(g): " + sets.map { $0[g].map { $0.serialized() } ?? "absent" }.joined(separator: " | "))
            }
        }
        return out.prefix(6).joined(separator: "\n")
    }
}
