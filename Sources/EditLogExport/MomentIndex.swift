import EditLogCore
import EditLogStore
import GRDB

/// The earliest event time on a clock in each block of positions, for a reader that asks for many moments (the
/// feature service's `historicMoment`). The position a time names (`Replay.position`: the last event at or before
/// it) is in the last block whose earliest time is at or before it, so a lookup reads that block's events instead of
/// every event after the answer; the earliest time of all (`Replay.startTime`) is the least of the blocks'. Made by
/// one pass over the log, then kept up with the events appended since (`update`). Times compare as SQLite compares
/// the stored text (byte by byte).
public struct MomentIndex: Sendable {
    public let clock: EventClock
    /// Positions per block: block k holds positions k·size+1 … (k+1)·size.
    public let size: Int64
    /// Events 1...head are in it.
    public private(set) var head: Int64 = 0
    /// The earliest time (stored form) of each block; nil for a block without events.
    private var earliest: [String?] = []
    /// The earliest time of all blocks.
    public private(set) var start: String?

    public init(clock: EventClock, size: Int64 = 4_096) {
        self.clock = clock
        self.size = max(1, size)
    }

    /// Adds the events after `head`, through the log's last one.
    public mutating func update(_ db: Database) throws {
        let rows = try Row.fetchAll(db, sql: """
            SELECT (position - 1) / ? AS block, MIN(\(clock.column)), MAX(position) FROM events WHERE position > ? GROUP BY block ORDER BY block
            """, arguments: [size, head])
        for r in rows {
            let block = Int(r[0] as Int64), time: String = r[1], last: Int64 = r[2]
            while earliest.count <= block { earliest.append(nil) }
            if earliest[block].map({ Self.atOrBefore(time, $0) }) ?? true { earliest[block] = time }
            if start.map({ Self.atOrBefore(time, $0) }) ?? true { start = time }
            head = max(head, last)
        }
    }

    /// The position `time` names among events 1...head (`Replay.position` by this clock): 0 when no event is at or
    /// before it.
    public func position(_ db: Database, time: String) throws -> Int64 {
        guard let block = earliest.lastIndex(where: { $0.map { Self.atOrBefore($0, time) } ?? false }) else { return 0 }
        let first = Int64(block) * size + 1
        return try Replay.position(db, .time(time), by: clock, within: first...min(first + size - 1, head))
    }

    /// `a <= b` as SQLite's BINARY collation has it.
    static func atOrBefore(_ a: String, _ b: String) -> Bool { !b.utf8.lexicographicallyPrecedes(a.utf8) }
}
