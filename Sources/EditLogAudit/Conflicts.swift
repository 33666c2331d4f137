import EditLogCore
import EditLogMerge
import EditLogStore
import GRDB

/// A conflict as this log knows it: the decision that met it (this log's or, imported, another's) and every
/// later resolution by hand.
public struct ConflictRecord: Sendable, Hashable {
    public var conflict: Conflict
    /// The log that decided it, and where the decision sits in this log.
    public var decidedIn: String
    public var position: Int64
    public var decidedBy: String
    /// On the fold's clock.
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
    /// On the fold's clock.
    public var time: String
    public var log: String

    public var json: JSONValue {
        .object(["position": .int(position), "take": .string(take), "value": value, "actor": .string(actor), "device": .string(device),
                 "time": .string(time), "log": .string(log)])
    }
}

/// The conflict read model: `MergeDecided` and `ConflictResolved` events folded in position order into one record per
/// conflict, each with the resolutions that followed it. `conflicts`, `show` and the report all read it through here.
/// A resolution of a conflict the fold has not met (decided before the events it was fed) is left out.
public struct ConflictFold: Sendable {
    public let clock: EventClock
    public private(set) var records: [ConflictRecord] = []
    private var index: [String: Int] = [:]

    /// The event types the fold reads.
    public static let types: [EventType] = [.mergeDecided, .conflictResolved, .schemaChanged]

    public init(clock: EventClock = .default) { self.clock = clock }

    /// Folds one event (other types are ignored). A decision or resolution that does not decode is `.corrupt` at its position.
    public mutating func apply(_ e: RecordedEvent) throws {
        guard let type = e.eventType, Self.types.contains(type) else { return }
        switch try e.body {
        case .mergeDecided(let d):
            for c in d.conflicts {
                index[c.id] = records.count
                records.append(ConflictRecord(conflict: c, decidedIn: d.log, position: e.position, decidedBy: e.actor,
                                              decidedAt: clock.time(of: e), resolutions: []))
            }
        case .schemaChanged(let s):
            // The local values a schema change could not keep (this log's own changes; another's are its records).
            for c in s.conflicts {
                index[c.id] = records.count
                records.append(ConflictRecord(conflict: c, decidedIn: e.origin.logId, position: e.position, decidedBy: e.actor,
                                              decidedAt: clock.time(of: e), resolutions: []))
            }
        case .conflictResolved(let x):
            guard let id = x.conflictId, let i = index[id] else { return }
            records[i].resolutions.append(ConflictResolution(position: e.position, take: x.take ?? "value", value: x.value, actor: e.actor,
                                                             device: e.device, time: clock.time(of: e), log: e.origin.logId))
        default:
            return
        }
    }
}

extension Audit {
    /// Every conflict the log holds (its own decisions and those of the logs it imported), in log order; with
    /// `stream`, those of one feature's stream (through the stream index).
    public static func conflicts(_ db: Database, stream: String? = nil, clock: EventClock = .default) throws -> [ConflictRecord] {
        var fold = ConflictFold(clock: clock)
        let types = StatementArguments(ConflictFold.types.map(\.rawValue))
        try EventReading.forEach(db, where: stream == nil ? "type IN (?, ?, ?)" : "stream = ? AND type IN (?, ?, ?)",
                                 arguments: stream.map { [$0] + types } ?? types) { try fold.apply($0) }
        return fold.records
    }
}
