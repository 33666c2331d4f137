
/// Which of an event's two times every command reads (audit views and replay alike). Every such command filters and prints by one clock
/// and says which (`time (client)`, `"clock":"client"`).
///
/// `client` (the default) is what the field crew's device said when the step happened (the script line's
/// `at`), falling back to the recording time for an event whose client gave none. `recorded` is when this
/// log stored the event (server time, monotonic in position).
public enum EventClock: String, Sendable, CaseIterable, Hashable {
    case client
    case recorded

    public static let `default`: EventClock = .client

    public func time(of e: RecordedEvent) -> String {
        switch self {
        case .client: e.clientTime ?? e.recordedTime
        case .recorded: e.recordedTime
        }
    }

    /// The SQL expression over `events` for this clock's time.
    public var column: String {
        switch self {
        case .client: "COALESCE(client_time, recorded_time)"
        case .recorded: "recorded_time"
        }
    }

    /// The header of a printed time column: `time (client)`.
    public var label: String { "time (\(rawValue))" }
}

/// A moment of the log: a position, or a time on a clock (stored form, `YYYY-MM-DDTHH:MM:SS.fffZ`).
public enum LogMoment: Sendable, Hashable, CustomStringConvertible {
    case position(Int64)
    case time(String)

    /// A non-negative integer is a position; otherwise an ISO-8601 time with a zone.
    public init?(_ s: String) {
        if let p = Int64(s) {
            guard p >= 0 else { return nil }
            self = .position(p)
        } else if let t = Timestamp.normalize(s) {
            self = .time(t)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .position(let p): "position \(p)"
        case .time(let t): t
        }
    }

    public var json: JSONValue {
        switch self {
        case .position(let p): .int(p)
        case .time(let t): .string(t)
        }
    }

    /// Whether the event is at or before this moment on `clock`.
    public func includes(_ e: RecordedEvent, clock: EventClock) -> Bool {
        switch self {
        case .position(let p): e.position <= p
        case .time(let t): clock.time(of: e) <= t
        }
    }

}
