import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// A conflict as this log knows it: the decision that met it (this log's or, imported, another's) and every
/// later resolution by hand.
public struct ConflictRecord: Sendable, Hashable {
    public var conflict: Conflict
    /// The log that decided it, and where the decision sits in this log.
    public var decidedIn: String
    public var position: Int64
    public var decidedBy: String
    public var decidedAt: String
    public var resolutions: [ConflictResolution]

    /// open (manual, not resolved yet), decided (by the policy) or resolved (by hand, latest resolution).
    public var status: String { !resolutions.isEmpty ? "resolved" : conflict.winner == .open ? "open" : "decided" }

    public var json: JSONValue {
        var o = conflict.json.objectValue ?? [:]
        o["key"] = .string(conflict.key)
        o["status"] = .string(status)
        o["decidedIn"] = .string(decidedIn)
        o["position"] = .int(position)
        o["decidedBy"] = .string(decidedBy)
        o["decidedAt"] = .string(decidedAt)
        o["resolutions"] = .array(resolutions.map(\.json))
        return .object(o)
    }
}

/// A conflict re-resolved by hand: a `ConflictResolved` event.
public struct ConflictResolution: Sendable, Hashable {
    public var position: Int64
    public var take: String
    public var value: JSONValue
    public var actor: String
    public var device: String
    public var time: String
    public var log: String

    public var json: JSONValue {
        .object(["position": .int(position), "take": .string(take), "value": value, "actor": .string(actor), "device": .string(device),
                 "time": .string(time), "log": .string(log)])
    }
}

extension EditLog {
    /// Every conflict this log holds (its own decisions and those of the logs it imported), in log order.
    public func conflicts() throws(EditLogError) -> [ConflictRecord] {
        try read { db in try Self.conflicts(db, stream: nil) }
    }

    /// The conflicts of one feature's stream (through the stream index), or of the whole log.
    static func conflicts(_ db: Database, stream: String?) throws -> [ConflictRecord] {
            var records: [ConflictRecord] = []
            var index: [String: Int] = [:]
            let types: StatementArguments = [EventType.mergeDecided.rawValue, EventType.conflictResolved.rawValue]
            try EventReading.forEach(db, where: stream == nil ? "type IN (?, ?)" : "stream = ? AND type IN (?, ?)",
                                     arguments: stream.map { [$0] + types } ?? types) { e in
                if e.eventType == .mergeDecided {
                    let d: MergeDecision
                    do throws(EditLogError) { d = try MergeDecision(json: e.payload) } catch { throw error.at("position \(e.position)") }
                    for c in d.conflicts {
                        index[c.id] = records.count
                        records.append(ConflictRecord(conflict: c, decidedIn: d.log, position: e.position, decidedBy: e.actor,
                                                      decidedAt: e.clientTime ?? e.recordedTime, resolutions: []))
                    }
                } else if let id = e.payload["conflictId"]?.stringValue, let i = index[id] {
                    records[i].resolutions.append(ConflictResolution(
                        position: e.position, take: e.payload["take"]?.stringValue ?? "value", value: e.payload["value"] ?? .null,
                        actor: e.actor, device: e.device, time: e.clientTime ?? e.recordedTime, log: e.origin.logId))
                }
            }
            return records
    }

    /// One conflict by id (a prefix of at least 8 characters is enough when it is unique).
    public func conflict(id: String) throws(EditLogError) -> ConflictRecord {
        let all = try conflicts()
        let hits = all.filter { $0.conflict.id == id || (id.count >= 8 && $0.conflict.id.hasPrefix(id.lowercased())) }
        guard let first = hits.first else { throw EditLogError(.notFound, "no conflict \(id); `editlog conflicts list` shows them") }
        guard hits.count == 1 else { throw EditLogError(.invalidInput, "conflict id \(id) is ambiguous (\(hits.count) match); give more of it") }
        return first
    }

    /// Re-resolves a conflict by hand (`ConflictResolver`): a field conflict takes the chosen value, validated as a pop-up
    /// edit of that field would be, and the rules derive again after it; any other is closed as this log holds it.
    @discardableResult
    public func resolveConflict(id: String, take choice: ConflictChoice, actor: String, device: String, at clientTime: String? = nil) throws(EditLogError) -> RecordedEvent {
        let record = try conflict(id: id)
        let context = EventContext(actor: actor, device: device, clientTime: clientTime ?? Timestamp.format(milliseconds: store.clock.now()))
        let resolver = try ConflictResolver(record.conflict, take: choice, schema: schema, context: context)
        return try write { unit in try resolver.resolve(in: &unit) }
    }
}
