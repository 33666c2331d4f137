

/// The author of a value (who wrote it, in which log, event and session), and the order `last-in-wins` compares:
/// client time (recorded time when the client gave none), then the origin log id, then the origin position. Every log
/// orders the same two writes the same way, whatever order it received them in.
public struct Author: Sendable, Hashable {
    public var eventId: String
    /// Client time (else recorded time), normalized ISO-8601.
    public var time: String
    public var millis: Int64
    public var logId: String
    public var position: Int64
    public var actor: String
    public var device: String
    public var session: String?

    public init(eventId: String, time: String, logId: String, position: Int64, actor: String, device: String, session: String?) {
        self.eventId = eventId; self.time = time; self.millis = Timestamp.parse(time) ?? 0
        self.logId = logId; self.position = position; self.actor = actor; self.device = device; self.session = session
    }

    /// The writer of an event: its origin (never the position it got in this log). A baseline (the data a
    /// log was made from) comes before every edit whatever its time: a log made at 10:00 from the service
    /// must not win against an edit made at 9:00 on a device; two baselines still order by log and position.
    public init(_ e: RecordedEvent) {
        // The order fields as `Order` takes them (the one place that says what an event's order is).
        let order = Order(e)
        eventId = e.id.lowercasedString; time = e.clientTime ?? e.recordedTime
        millis = order.millis; logId = order.logId; position = order.position
        actor = e.actor; device = e.device; session = e.session
    }

    /// True when `self` was written before `other` in last-in-wins order.
    public func isBefore(_ other: Author) -> Bool {
        if millis != other.millis { return millis < other.millis }
        if logId != other.logId { return logId < other.logId }
        return position < other.position
    }

    public var json: JSONValue {
        .object(["event": .string(eventId), "time": .string(time), "log": .string(logId), "originPosition": .int(position),
                 "actor": .string(actor), "device": .string(device), "session": JSONValue(session)])
    }

    public init?(json: JSONValue) {
        guard let id = json["event"]?.stringValue, let time = json["time"]?.stringValue, let log = json["log"]?.stringValue,
              let pos = json["originPosition"]?.intValue, let actor = json["actor"]?.stringValue, let device = json["device"]?.stringValue else { return nil }
        self.init(eventId: id, time: time, logId: log, position: pos, actor: actor, device: device, session: json["session"]?.stringValue)
    }
}

extension Author {
    /// What `isBefore` compares of an event's writer, without the rest (above all the event id formatted as text):
    /// an import compares the order of every event it merges.
    public struct Order: Sendable, Hashable {
        public var millis: Int64
        public var logId: String
        public var position: Int64

        /// The order of the event's writer: its client time (else recorded time; a baseline before every edit, see
        /// `Author.init(_:)`), its origin log and origin position.
        public init(_ e: RecordedEvent) {
            millis = e.type == EventType.featureBaselined.rawValue ? Int64.min : Timestamp.parse(e.clientTime ?? e.recordedTime) ?? 0
            logId = e.origin.logId
            position = e.origin.position
        }
    }

    /// The order of this writer.
    public var order: Order { Order(millis: millis, logId: logId, position: position) }
}

extension Author.Order {
    public init(millis: Int64, logId: String, position: Int64) { self.millis = millis; self.logId = logId; self.position = position }
}

extension Optional where Wrapped == Author {
    /// nil (the common base, or nothing) comes before every writer.
    public func isBefore(_ other: Author) -> Bool {
        guard let s = self else { return true }
        return s.isBefore(other)
    }
}

/// The later of two writers (nil is the earliest).
public func latest(_ a: Author?, _ b: Author?) -> Author? {
    guard let a else { return b }
    guard let b else { return a }
    return a.isBefore(b) ? b : a
}
