import EditLog
import Foundation

/// The replayed states `historicMoment` queries read, kept for clients that page through one moment.
///
/// A moment (epoch ms on the service's clock) names a position, as `replay --as-of` reads it; the state after that
/// position is made from the nearest checkpoint (`EditLog.historicState`: the checkpoint read in place, the rows the
/// events after it reach in a scratch file). A position's state never changes (the log is append-only), so the states
/// are kept by position in a small LRU (`capacity` of them, their files in the folder `<log>.moments-<pid>/`): the
/// first request at a moment makes its state, the next pages read it. A moment's position is found through a
/// `MomentIndex` (the earliest time of each block of events, kept up with the log), and the moment → position
/// lookups are kept too, keyed by the log's last position: an event appended later with an earlier client time moves
/// a moment's position. An evicted state is closed (its file removed) when its last reader is done; every file, and
/// the folder, are removed when the service is released.
final class HistoricMoments: @unchecked Sendable {
    let directory: String
    let capacity: Int
    let clock: EventClock
    private let lock = NSLock()
    /// One replay at a time: a second request for a moment being replayed waits and reads the first one's state.
    private let building = NSLock()
    private final class Entry {
        let state: HistoricState
        var readers = 0
        var evicted = false
        init(_ state: HistoricState) { self.state = state }
    }
    private var entries: [Int64: Entry] = [:]
    /// Positions by use, the most recent last.
    private var order: [Int64] = []
    private struct Lookup: Hashable { var ms: Int64; var head: Int64 }
    private var positions: [Lookup: Int64] = [:]
    /// One reader of the index at a time (`withIndex`): a caller waits for another's update and reads on from it.
    private let indexing = NSLock()
    private var index: MomentIndex

    init(logPath: String, capacity: Int, clock: EventClock) {
        directory = logPath + ".moments-\(getpid())"
        self.capacity = max(1, capacity)
        self.clock = clock
        index = MomentIndex(clock: clock)
    }

    deinit { close() }

    /// The earliest event time on the clock (epoch ms): the service's `startArchivingMoment`, the index's start once
    /// it holds the log's last event (one pass over the log the first time, then only the events appended since).
    func startMilliseconds(_ handles: LogHandles) throws -> Int64? {
        try withIndex { index in
            try handles.read { try $0.catchUp(&index) }
            return index.start.flatMap(Timestamp.parse)
        }
    }

    private func withIndex<T>(_ body: (inout MomentIndex) throws -> T) rethrows -> T {
        indexing.lock()
        defer { indexing.unlock() }
        return try body(&index)
    }

    /// The position of a moment, or ArcGIS's query error for a moment before the earliest event time.
    func position(_ ms: Int64, _ handles: LogHandles) throws -> Int64 {
        let first = try startMilliseconds(handles)
        guard let first, ms >= first else {
            throw ServiceError.query("historicMoment \(ms) (\(Timestamp.human(milliseconds: ms))) is before startArchivingMoment "
                + (first.map { "\($0) (\(Timestamp.human(milliseconds: $0)))" } ?? "(the log has no event)")
                + ", the earliest event time on the \(clock.rawValue) clock: ask for a moment at or after it")
        }
        let (head, p) = try handles.read { log -> (Int64, Int64?) in
            let head = try log.lastPosition()
            lock.lock()
            defer { lock.unlock() }
            return (head, positions[Lookup(ms: ms, head: head)])
        }
        if let p { return p }
        let found = try withIndex { index in try handles.read { try $0.position(atMilliseconds: ms, in: &index) } }
        lock.lock()
        if positions.count >= 256 { positions.removeAll() }
        positions[Lookup(ms: ms, head: head)] = found
        lock.unlock()
        return found
    }

    /// Runs `body` on the state after `position`, replaying it first unless it is kept.
    func with<T>(position: Int64, _ handles: LogHandles, _ body: (HistoricState) throws -> T) throws -> T {
        let entry = try acquire(position, handles)
        defer { release(entry) }
        return try body(entry.state)
    }

    private func take(_ position: Int64) -> Entry? {
        guard let e = entries[position] else { return nil }
        e.readers += 1
        order.removeAll { $0 == position }
        order.append(position)
        return e
    }

    private func acquire(_ position: Int64, _ handles: LogHandles) throws -> Entry {
        lock.lock()
        if let e = take(position) { lock.unlock(); return e }
        lock.unlock()
        building.lock()
        defer { building.unlock() }
        lock.lock()
        if let e = take(position) { lock.unlock(); return e }
        lock.unlock()
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EditLogError(.io, "cannot create the folder of historic moments: \(error)", at: directory)
        }
        let state = try handles.read { try $0.historicState(at: position, file: directory + "/\(position).sqlite") }
        let e = Entry(state)
        var closing: [HistoricState] = []
        lock.lock()
        e.readers = 1
        entries[position] = e
        order.append(position)
        while order.count > capacity, let oldest = order.first {
            order.removeFirst()
            if let old = entries.removeValue(forKey: oldest) {
                old.evicted = true
                if old.readers == 0 { closing.append(old.state) }
            }
        }
        lock.unlock()
        for s in closing { s.close() }
        return e
    }

    private func release(_ e: Entry) {
        lock.lock()
        e.readers -= 1
        let close = e.evicted && e.readers == 0
        lock.unlock()
        if close { e.state.close() }
    }

    /// Closes every kept state and removes the folder.
    func close() {
        lock.lock()
        let all = entries.values.map(\.state)
        entries = [:]
        order = []
        lock.unlock()
        for s in all { s.close() }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension FeatureService {
    /// Runs `body` on what a request reads: the live projections, or with `historicMoment` (epoch ms) the layers and
    /// tables as they were then (`HistoricMoments`), each with the layer as its schema has it.
    func withReader<T>(_ layer: LayerSchema, _ r: ServiceRequest, _ body: (any ProjectionReader, LayerSchema) throws -> T) throws -> T {
        guard let text = r.params["historicMoment"] else { return try handles.read { log in try body(log, layer) } }
        guard let ms = Int64(text.trimmingCharacters(in: .whitespaces)) else {
            throw ServiceError.query("historicMoment: \"\(text.prefix(40))\" is not a moment (epoch milliseconds)")
        }
        try handles.refresh()
        let position = try moments.position(ms, handles)
        return try moments.with(position: position, handles) { state in
            guard let then = state.schema.layer(id: layer.id) else {
                throw ServiceError.query("historicMoment \(ms): \(layer.name) (layer \(layer.id)) did not exist then (position \(position))")
            }
            return try body(state, then)
        }
    }

    /// The layer definition's `archivingInfo`: every layer can be read as of any moment since the earliest event time.
    func archivingInfo() -> JSONValue {
        let start = (try? moments.startMilliseconds(handles)).flatMap { $0 } ?? -1
        return ["supportsQueryWithHistoricMoment": true, "startArchivingMoment": .int(start)]
    }

    /// What the layer's `description` says of `historicMoment`: which clock a moment is read on.
    var historicMomentNote: String {
        "historicMoment (epoch ms) is read on the log's \(moments.clock.rawValue) clock, as `editlog replay --as-of` reads a time: "
            + (moments.clock == .client ? "the time the field device gave each edit (the recording time where it gave none)."
                                       : "the time this log recorded each edit.")
    }
}
