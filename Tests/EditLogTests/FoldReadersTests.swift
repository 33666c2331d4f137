import EditLog
import Foundation
import Testing

/// One row per kind of merge decision the merge tests found (a revive with an event, a delete skipped, a parent kept
/// for an orphan, records revived with their parent's cascade, a parent deleted again, editor tracking kept). Each row
/// builds its case through real imports, checks the decision is in the log, and then that every reader of events says
/// what the projection holds for every feature the case touched: blame, history, diff and a rebuild. All of them read
/// the decision through `FeatureEffect`; a reader that applied it its own way would disagree here.
@Suite struct FoldReadersTests {
    typealias M = MergeDevices

    enum Case: String, CaseIterable, CustomTestStringConvertible {
        case revive, skipDelete, orphanKept, cascadeRevived, deleteAgain, trackingKept
        var testDescription: String { rawValue }
        /// Whether a decision (its payload) is of the kind the case must produce.
        func made(_ d: JSONValue) -> Bool {
            switch self {
            case .revive: d["revive"] == true && d["event"] != .null
            case .skipDelete: d["skipDelete"] == true
            case .orphanKept: d["revive"] == true && d["event"] == .null && d["cascadeOf"] == nil
                && d["conflicts"]?.arrayValue?.contains { $0["kind"] == "orphan" } == true
            case .cascadeRevived: d["revive"] == true && d["cascadeOf"] != nil
            case .deleteAgain: d["deleteAgain"] == true
            case .trackingKept: d["keepTracking"] == true
            }
        }
    }

    /// The logs of a case, after its exchanges.
    static func build(_ c: Case, _ paths: [TempPath]) throws -> [EditLog] {
        switch c {
        case .revive, .skipDelete:
            // a deletes a tree, b updates it later: b skips the delete, a revives the tree with b's update.
            let a = try M.device("a", paths[0], seed: 1), b = try M.device("b", paths[1], seed: 2)
            _ = try MergeDeleteTests.deleteHereUpdateThere(a, b)
            try M.exchange(a, into: b, viaBundle: false)
            try M.exchange(b, into: a, viaBundle: false)
            return [a, b]
        case .orphanKept, .cascadeRevived:
            return try MergeOrphanTests.treeKeptForAnOrphan(paths).logs
        case .deleteAgain:
            let (logs, _, _, w2, _) = try MergeOrphanTests.treeKeptForAnOrphan(paths)
            try M.delete(logs[1], "Trees", w2, at: 3, actor: "bob")
            try MergeOrphanTests.exchangeAll(logs, order: [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)])
            return logs
        case .trackingKept:
            // b's edit (10:05) reaches a after a's later one (10:09): a keeps its own editor tracking.
            let a = try M.device("a", paths[0], seed: 1), b = try M.device("b", paths[1], seed: 2)
            try M.set(b, M.tree, [("PlantedBy", "\"bob\"")], at: 5, actor: "bob", session: "b-1")
            try M.set(a, M.tree, [("Condition", "\"Poor\"")], at: 9, actor: "ann", session: "a-1")
            try M.exchange(b, into: a, viaBundle: false)
            try M.exchange(a, into: b, viaBundle: false)
            return [a, b]
        }
    }

    @Test(arguments: Case.allCases)
    func everyReaderHoldsWhatTheProjectionHolds(_ c: Case) throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let logs = try Self.build(c, paths)
        let decided = try logs.flatMap { log in
            try log.events().filter { $0.type == EventType.mergeDecided.rawValue && $0.payload["log"]?.stringValue == log.logId && c.made($0.payload) }
        }
        #expect(!decided.isEmpty, "no decision of the kind \(c)")
        for log in logs {
            let streams = Set(try log.events().filter { $0.type == EventType.mergeDecided.rawValue || $0.type == EventType.featureDeleted.rawValue
                || $0.type == EventType.sessionCommitted.rawValue }.map(\.stream))
            let head = try log.lastPosition()
            let diff = try log.diff(from: .position(0), to: .position(head))
            var added: [String: FeatureChange] = [:]
            for ch in diff.changes where ch.kind == .added { added[ch.globalId] = ch }
            for stream in streams.sorted() {
                guard let (layerId, g) = StreamName.parseFeature(stream), let row = try log.snapshot(layer: layerId, globalId: g) else { continue }
                let layer = try log.layer(String(layerId))
                let at = "\(log.logId) \(layer.name) \(g)"
                // Blame: every field's value and the delete.
                let blame = try log.blame(globalId: g)
                #expect((blame.deleted != nil) == row.deleted, "\(at): blame's delete")
                for entry in blame.fields where layer.field(entry.field) != nil {
                    let name = layer.field(entry.field)!.name
                    #expect(entry.value == (row.attributes[name] ?? .null), "\(at): blame's \(name)")
                }
                // History: its lines replayed in order end at the row (a decision's conflict lines are records of a conflict,
                // another log's naming what that log kept).
                var values: [String: JSONValue] = [:]
                var deleted = false
                for h in try log.history(globalId: g).entries where !(h.cause.hasPrefix("merge:") && h.field != "@deleted") {
                    if h.field == "@deleted" { deleted = h.new == true } else if let f = layer.field(h.field) { values[f.name] = h.new }
                }
                #expect(deleted == row.deleted, "\(at): history's delete")
                for (k, v) in values { #expect(v == (row.attributes[k] ?? .null), "\(at): history's \(k)") }
                // Diff from the start: a live feature is added with its values; a deleted one is not there.
                #expect((added[g] != nil) == !row.deleted, "\(at): diff from the start")
                for f in added[g]?.fields ?? [] where layer.field(f.field) != nil {
                    #expect(f.new == (row.attributes[layer.field(f.field)!.name] ?? .null), "\(at): diff's \(f.field)")
                }
            }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): a rebuild")
        }
    }
}
