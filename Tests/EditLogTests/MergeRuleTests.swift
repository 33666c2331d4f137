import EditLogCore
import EditLogMerge
import Foundation
import Testing

/// What "last in" means under `last-in-wins`, case by case: by client time between logs (bundles), by upload
/// against a service (sync: this log's changes since its last sync win, a delete on either side stands).
@Suite struct MergeRuleTests {
    typealias E = MergeEnginePlainTests

    /// The local history: a baseline, then (when `localMinute` is given) this log's commit of Condition = "Poor".
    static func local(localMinute: Int?, deleted: Bool = false, attachment: (name: String, deleted: Bool)? = nil) throws -> LocalFeature {
        var history = FeatureHistory(ownLog: "here")
        try history.apply(E.event(.featureBaselined, payload: ["attributes": ["Condition": "Good"]], minute: 0, log: "hub", originPosition: 1, id: 1))
        if let m = localMinute {
            var payload: JSONValue = ["changes": ["Condition": ["old": "Good", "new": "Poor"]]]
            if let a = attachment {
                payload = ["changes": [:], "attachments": a.deleted ? ["removed": [["attachmentId": "att", "name": "a.jpg"]]]
                                                                     : ["renamed": [["attachmentId": "att", "old": "a.jpg", "new": .string(a.name)]]]]
            }
            try history.apply(E.event(.sessionCommitted, payload: payload, minute: m, log: "here", originPosition: 2, id: 2))
        }
        if deleted {
            try history.apply(E.event(.featureDeleted, payload: ["attributes": ["Condition": "Good"]], minute: localMinute ?? 1, log: "here", originPosition: 3, id: 3))
        }
        let snapshot = FeatureSnapshot(layerId: E.layer, globalId: E.globalId, objectId: 1,
                                       attributes: ["Condition": attachment == nil && localMinute != nil ? "Poor" : "Good"], geometry: nil, deleted: deleted)
        return LocalFeature(layer: E.layer, globalId: E.globalId, snapshot: snapshot,
                            attachments: ["att": attachment ?? (name: "a.jpg", deleted: false)], history: history)
    }

    static func remote(_ type: EventType, minute: Int, _ payload: JSONValue) -> RecordedEvent {
        E.event(type, payload: payload, minute: minute, log: "service", originPosition: 10, id: 10)
    }

    static let fair: JSONValue = ["changes": ["Condition": ["old": "Good", "new": "Fair"]], "attachments": ["added": []]]

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var rule: LastInRule
        var localMinute: Int
        var remoteMinute: Int
        /// Who wins the field conflict (local Poor against remote Fair).
        var winner: Winner
        var testDescription: String { name }
    }

    static let fieldRows: [Row] = [
        Row(name: "client time: the later remote write wins", rule: .clientTime, localMinute: 5, remoteMinute: 9, winner: .remote),
        Row(name: "client time: the later local write wins", rule: .clientTime, localMinute: 9, remoteMinute: 5, winner: .local),
        Row(name: "upload: the local change wins though the service's is later", rule: .upload, localMinute: 5, remoteMinute: 9, winner: .local),
        Row(name: "upload: the local change wins when later too", rule: .upload, localMinute: 9, remoteMinute: 5, winner: .local),
    ]

    @Test(arguments: fieldRows)
    func aFieldChangedOnBothSides(row: Row) throws {
        let engine = MergeEngine(policy: .lastInWins, rule: row.rule, ownLog: "here")
        let d = try engine.decide(Self.remote(.sessionCommitted, minute: row.remoteMinute, Self.fair), local: Self.local(localMinute: row.localMinute))
        let c = try #require(d.conflicts.first)
        #expect(c.winner == row.winner && c.rule == row.rule && c.policy == .lastInWins)
        #expect(d.skipFields.contains("Condition") == (row.winner == .local))
        // The record names the rule, and reads back the same.
        #expect(try Conflict(json: c.json).rule == row.rule)
        #expect(c.ruleDescription.contains(row.rule == .upload ? "upload" : "client time"))
    }

    @Test func underTheUploadRuleAChangeOnlyTheServiceMadeIsTaken() throws {
        let engine = MergeEngine(policy: .lastInWins, rule: .upload, ownLog: "here")
        let d = try engine.decide(Self.remote(.sessionCommitted, minute: 9, Self.fair), local: Self.local(localMinute: nil))
        #expect(d.conflicts.isEmpty && d.skipFields.isEmpty)
    }

    @Test(arguments: LastInRule.allCases)
    func aDeleteAgainstALocalUpdate(rule: LastInRule) throws {
        // Updated here at minute 9, deleted on the other side at minute 5 (earlier).
        let engine = MergeEngine(policy: .lastInWins, rule: rule, ownLog: "here")
        let d = try engine.decide(Self.remote(.featureDeleted, minute: 5, ["attributes": ["Condition": "Good"]]), local: Self.local(localMinute: 9))
        // By client time the later update keeps the feature; by upload the service's delete stands.
        #expect(d.skipDelete == (rule == .clientTime))
        #expect(d.conflicts.first?.kind == .updateDelete && d.conflicts.first?.winner == (rule == .clientTime ? .local : .remote))
    }

    @Test(arguments: LastInRule.allCases)
    func anUpdateAgainstALocalDelete(rule: LastInRule) throws {
        // Deleted here at minute 5, updated on the other side at minute 9 (later).
        let engine = MergeEngine(policy: .lastInWins, rule: rule, ownLog: "here")
        let d = try engine.decide(Self.remote(.sessionCommitted, minute: 9, Self.fair), local: Self.local(localMinute: 5, deleted: true))
        #expect(d.revive == (rule == .clientTime))
        #expect(d.conflicts.contains { $0.kind == .deleteUpdate && $0.winner == (rule == .clientTime ? .remote : .local) })
    }

    @Test(arguments: LastInRule.allCases)
    func aDetachAgainstALocalRename(rule: LastInRule) throws {
        // Renamed here at minute 9, detached on the other side at minute 5.
        let engine = MergeEngine(policy: .lastInWins, rule: rule, ownLog: "here")
        let payload: JSONValue = ["changes": [:], "attachments": ["added": [], "removed": [["attachmentId": "att", "name": "a.jpg"]]]]
        let d = try engine.decide(Self.remote(.sessionCommitted, minute: 5, payload), local: Self.local(localMinute: 9, attachment: (name: "b.jpg", deleted: false)))
        let c = try #require(d.conflicts.first { $0.kind == .renameDetach })
        #expect(c.winner == (rule == .clientTime ? .local : .remote))
        #expect(d.skipAttachments.contains("att") == (rule == .clientTime))
    }
}
