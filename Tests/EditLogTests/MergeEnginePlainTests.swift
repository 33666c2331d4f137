import EditLogCore
import EditLogMerge
import Foundation
import Testing

/// `MergeEngine.decidesPlainly`, the importer's shortcut past a feature's history: whenever it says plain, the whole
/// merge (`decide`, with any history whose writers all come before the event) says plain too.
@Suite struct MergeEnginePlainTests {
    static let layer = 0
    static let globalId = "{6C4B9A53-0C0E-4C4B-8E3B-0E4C5A1B2C3D}"
    static let fields = ["Condition", "DBH", "Notes", "Derived"]
    static let values: [JSONValue] = [.null, .string("Good"), .string("Poor"), .int(12), .int(30)]

    static func event(_ type: EventType, payload: JSONValue, minute: Int, log: String, originPosition: Int64, id: UInt64) -> RecordedEvent {
        let time = String(format: "2026-05-01T10:%02d:00.000Z", minute)
        return RecordedEvent(position: originPosition, id: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012llx", id))!,
                             stream: "feature-\(layer)-\(globalId)", streamVersion: originPosition, type: type.rawValue, payload: complete(payload, type),
                             actor: "crew-\(log)", device: "device-\(log)", session: type == .sessionCommitted ? "s\(id)" : nil, cause: "test",
                             clientTime: time, recordedTime: time, origin: EventOrigin(logId: log, position: originPosition, hash: Array(repeating: 0, count: 32)),
                             hash: Array(repeating: 0, count: 32))
    }

    /// The payload with what its type requires and the case leaves out (the feature, an update's kind, no attachments).
    static func complete(_ payload: JSONValue, _ type: EventType) -> JSONValue {
        var o = payload.objectValue ?? [:]
        o["layer"] = o["layer"] ?? .int(Int64(layer))
        o["globalId"] = o["globalId"] ?? .string(globalId)
        switch type {
        case .featureBaselined, .featureDeleted: o["attributes"] = o["attributes"] ?? [:]
        case .sessionCommitted: o["kind"] = o["kind"] ?? "update"; o["changes"] = o["changes"] ?? [:]; o["attachments"] = o["attachments"] ?? [:]
        case .featureDerived: o["rule"] = o["rule"] ?? "test"; o["changes"] = o["changes"] ?? [:]
        case .conflictResolved:
            o["changes"] = o["changes"] ?? [:]; o["conflictId"] = o["conflictId"] ?? "c"; o["take"] = o["take"] ?? "value"
            o["value"] = o["value"] ?? .null; o["field"] = o["field"] ?? "Condition"
        default: break
        }
        return .object(o)
    }

    static func changes(_ rng: inout SplitMix64) -> JSONValue {
        var o: [String: JSONValue] = [:]
        for f in fields where Bool.random(using: &rng) {
            o[f] = .object(["old": values.randomElement(using: &rng)!, "new": values.randomElement(using: &rng)!])
        }
        return .object(o)
    }

    @Test(arguments: 0..<40)
    func plainWithoutHistoryIsPlainWithIt(seed: Int) throws {
        var rng = SplitMix64(seed: UInt64(seed))
        var plainSeen = 0, notPlainSeen = 0
        for policy in MergePolicy.allCases {
            let engine = MergeEngine(policy: policy, rule: seed % 2 == 0 ? .clientTime : .upload, ownLog: "here", excluded: [Self.layer: ["Derived"]])
            for round in 0..<60 {
                // A history of earlier writes (creates, commits, derived values, baselines) from either side.
                var history = FeatureHistory(ownLog: "here")
                var minute = 0, n: UInt64 = 0
                try history.apply(Self.event(.featureBaselined, payload: .object(["attributes": .object(["Condition": .string("Good")])]),
                                         minute: minute, log: "hub", originPosition: 1, id: n))
                for _ in 0..<Int.random(in: 0...5, using: &rng) {
                    minute += Int.random(in: 0...2, using: &rng); n += 1
                    let log = ["here", "a", "b"].randomElement(using: &rng)!
                    let type: EventType = [.sessionCommitted, .featureDerived, .conflictResolved].randomElement(using: &rng)!
                    try history.apply(Self.event(type, payload: .object(["changes": Self.changes(&rng)]), minute: minute, log: log, originPosition: Int64(n + 1), id: n))
                }
                // The event: after every write of the history (a later minute, or the same minute and a later order).
                minute += Int.random(in: 0...1, using: &rng); n += 1
                let remoteLog = minute == 0 ? "z" : ["a", "b", "z"].randomElement(using: &rng)!
                let type: EventType = [.sessionCommitted, .sessionCommitted, .featureDerived, .conflictResolved].randomElement(using: &rng)!
                var payload: [String: JSONValue] = ["changes": Self.changes(&rng)]
                if type == .sessionCommitted {
                    payload["kind"] = .string(Int.random(in: 0..<8, using: &rng) == 0 ? "create" : "update")
                    var atts: [String: JSONValue] = ["added": .array([])]
                    if Int.random(in: 0..<6, using: &rng) == 0 { atts["renamed"] = .array([.object(["attachmentId": .string("att"), "old": .string("a.jpg"), "new": .string("b.jpg")])]) }
                    payload["attachments"] = .object(atts)
                }
                let remote = Self.event(type, payload: .object(payload), minute: minute, log: remoteLog, originPosition: Int64(1_000 + round), id: 10_000 + n)
                let w = Author(remote)
                let writers = Array(history.fieldWriters.values) + Array(history.attachmentWriters.values) + Array(history.detachWriters.values)
                    + [history.lastWrite, history.lastDelete, history.lastTracked, history.createdBy].compactMap { $0 }
                guard writers.allSatisfy({ $0.isBefore(w) }) else { continue }
                var attrs: [String: JSONValue] = [:]
                for f in Self.fields { attrs[f] = Self.values.randomElement(using: &rng)! }
                let snapshot = FeatureSnapshot(layerId: Self.layer, globalId: Self.globalId, objectId: 1, attributes: attrs, geometry: nil,
                                               deleted: Int.random(in: 0..<10, using: &rng) == 0)
                let local = LocalFeature(layer: Self.layer, globalId: Self.globalId, snapshot: snapshot,
                                         attachments: ["att": (name: "c.jpg", deleted: false)], history: history)
                let decision = try engine.decide(remote, local: local)
                if engine.decidesPlainly(remote, snapshot: snapshot) {
                    plainSeen += 1
                    #expect(decision.isPlain, "policy \(policy), seed \(seed), round \(round): \(decision.json.serialized())")
                } else {
                    notPlainSeen += 1
                }
            }
        }
        // Both answers occur, so the check above is not vacuous.
        #expect(plainSeen > 0 && notPlainSeen > 0)
    }
}
