import EditLog
import Foundation
import Testing

/// The one reading of a merge decision (`FeatureEffect`), row by row: what each kind of decision the merge tests
/// found does to its event. `FoldReadersTests` checks the same cases through every reader of a real log.
@Suite struct FeatureEffectTests {
    typealias E = MergeEnginePlainTests

    static func decision(_ body: (inout MergeDecision) -> Void, event: UInt64? = 7) -> MergeDecision {
        var d = MergeDecision(log: "here", event: event.map { String(format: "00000000-0000-4000-8000-%012llx", $0) }, layer: E.layer, globalId: E.globalId)
        body(&d)
        return d
    }

    static func effect(_ type: EventType, _ payload: JSONValue, _ d: MergeDecision?) throws -> FeatureEffect? {
        let e = E.event(type, payload: payload, minute: 1, log: "there", originPosition: 7, id: 7)
        return FeatureEffect.of(e, try e.body, decision: d)
    }

    static let change: JSONValue = ["Condition": ["old": "Good", "new": "Poor"], "PlantedBy": ["old": .null, "new": "bob"]]
    static let attachments: JSONValue = ["renamed": [["attachmentId": "a1", "old": "x.jpg", "new": "y.jpg"]], "removed": [["attachmentId": "a2", "name": "z.jpg"]]]

    static func fields(_ f: FeatureEffect?) -> [String] { f?.sortedValues.map(\.field) ?? [] }

    @Test func aPlainEventIsAppliedAsItCame() throws {
        let base = try Self.effect(.featureBaselined, ["attributes": ["Condition": "Good"], "geometry": ["x": 1, "y": 2]], nil)
        #expect(base?.row == .create && base?.tracking == .baseline && base?.geometry != nil && Self.fields(base) == ["Condition"])
        let create = try Self.effect(.sessionCommitted, ["kind": "create", "changes": Self.change], nil)
        #expect(create?.row == .create && create?.tracking == .create && Self.fields(create) == ["Condition", "PlantedBy"])
        let update = try Self.effect(.sessionCommitted, ["changes": Self.change, "attachments": Self.attachments], nil)
        #expect(update?.row == .update && update?.tracking == .edit && update?.attachments?.renamed.count == 1 && update?.attachments?.removed.count == 1)
        #expect(try Self.effect(.featureDeleted, [:], nil)?.row == .delete)
        #expect(try Self.effect(.featureDerived, ["changes": Self.change, "keepTracking": true], nil)?.tracking == .keep, "derived again after an import")
        #expect(try Self.effect(.conflictResolved, .object(["field": .null]), nil)?.row == .update)
        var closed = try #require(try Self.effect(.conflictResolved, [:], nil))
        #expect(closed.row == .update, "a resolution naming a field writes it")
        let e = E.event(.conflictResolved, payload: [:], minute: 1, log: "there", originPosition: 7, id: 7)
        var payload = e.payload.objectValue!
        payload["field"] = nil
        var noField = e
        noField.payload = .object(payload)
        closed = try #require(FeatureEffect.of(noField, try noField.body, decision: nil))
        #expect(closed.row == .none && closed.tracking == .keep, "closed as this log held it: nothing changes")
    }

    @Test func aDecisionAboutAnEventChangesItsEffect() throws {
        // Fields kept: not written; the commit is an update of the rest; tracking kept or not.
        let kept = try Self.effect(.sessionCommitted, ["kind": "create", "changes": Self.change], Self.decision { $0.skipFields = ["Condition"]; $0.keepTracking = true })
        #expect(kept?.row == .update && Self.fields(kept) == ["PlantedBy"] && kept?.tracking == .keep && kept?.kept("Condition") == true)
        // A create of a GlobalID this log has (a baseline, or a create on both sides): an update with the later writer's tracking.
        let merged = try Self.effect(.featureBaselined, ["attributes": ["Condition": "Good", "Nope": 1], "geometry": ["x": 1, "y": 2]],
                                     Self.decision { $0.asUpdate = true; $0.takeCreator = true; $0.keepTrackingFields = true; $0.skipFields = ["_geometry"] })
        #expect(merged?.row == .update && merged?.ignoresUnknownFields == true && merged?.geometry == nil)
        #expect(merged?.tracking == EditorTracking(editor: true, creator: true, fields: false))
        // Revived with the event (a later update of a feature deleted here), with the attachments its delete took.
        let revived = try Self.effect(.sessionCommitted, ["changes": Self.change], Self.decision { $0.revive = true; $0.reviveAttachments = ["a9"] })
        #expect(revived?.revives == true && revived?.revivedAttachments == ["a9"] && revived?.row == .update)
        // A delete not applied.
        #expect(try Self.effect(.featureDeleted, [:], Self.decision { $0.skipDelete = true })?.row == FeatureEffect.Row.none)
        // Attachment renames and detaches kept.
        let atts = try Self.effect(.sessionCommitted, ["changes": [:], "attachments": Self.attachments], Self.decision { $0.skipAttachments = ["a1", "a2"] })
        #expect(atts?.attachments?.renamed.isEmpty == true && atts?.attachments?.removed.isEmpty == true && atts?.keptAttachments == ["a1", "a2"])
        // Tracking kept for a rule's value and a resolution.
        #expect(try Self.effect(.featureDerived, ["changes": Self.change], Self.decision { $0.keepTracking = true })?.tracking == .keep)
    }

    @Test func aStandaloneDecisionRevivesOrDeletesAgain() throws {
        let orphan = try #require(FeatureEffect.of(standalone: Self.decision({ $0.revive = true; $0.reviveAttachments = ["a1"] }, event: nil)))
        #expect(orphan.revives && orphan.row == .none && orphan.revivedAttachments == ["a1"], "a parent kept for an orphan")
        let cascade = try #require(FeatureEffect.of(standalone: Self.decision({ $0.revive = true; $0.cascadeOf = "{P}" }, event: nil)))
        #expect(cascade.revives && cascade.row == .none, "a record live again with its parent")
        let again = try #require(FeatureEffect.of(standalone: Self.decision({ $0.deleteAgain = true; $0.detachAttachments = ["a1"] }, event: nil)))
        #expect(!again.revives && again.row == .deleteAgain && again.detachedAttachments == ["a1"], "deleted again once nothing keeps it")
        #expect(FeatureEffect.of(standalone: Self.decision({ $0.revive = true }, event: 7)) == nil, "a decision about an event waits for it")
        #expect(Self.decision({ $0.revive = true }, event: nil).liveness == .keptLive)
        #expect(Self.decision({ $0.revive = true }).liveness == .liveWithEvent)
        #expect(Self.decision({ $0.deleteAgain = true }, event: nil).liveness == .deletedAgain)
    }

    @Test func theFoldHoldsThisLogsDecisionUntilItsEventAndIgnoresAnotherLogs() throws {
        let target = E.event(.featureDeleted, payload: [:], minute: 2, log: "there", originPosition: 9, id: 9)
        func decided(by log: String) -> RecordedEvent {
            var d = MergeDecision(log: log, event: target.id.lowercasedString, layer: E.layer, globalId: E.globalId)
            d.skipDelete = true
            return RecordedEvent(position: 8, id: UUID(), stream: target.stream, streamVersion: 8, type: EventType.mergeDecided.rawValue, payload: d.json,
                                 actor: "a", device: "d", session: nil, cause: "merge:there", clientTime: nil, recordedTime: target.recordedTime,
                                 origin: EventOrigin(logId: log, position: 8, hash: []), hash: [])
        }
        var fold = EffectFold(ownLog: "here")
        #expect(try fold.next(decided(by: "here")).effect == nil)
        #expect(try fold.next(target).effect?.row == FeatureEffect.Row.none, "this log's decision skipped the delete")
        var other = EffectFold(ownLog: "here")
        _ = try other.next(decided(by: "elsewhere"))
        #expect(try other.next(target).effect?.row == .delete, "another log's decision is a record only")
        // A payload its type cannot read is corrupt, at its position, on every reader's path.
        var bad = target
        bad.payload = ["layer": "x"]
        #expect(throws: EditLogError.self) { _ = try fold.next(bad) }
        do { _ = try fold.next(bad) } catch { #expect(error.location == "position 9") }
        // A type this build does not know changes nothing.
        var unknown = target
        unknown.type = "FromTheFuture"
        #expect(try fold.next(unknown).effect == nil)
    }
}
