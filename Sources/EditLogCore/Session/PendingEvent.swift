/// An event the state machine decided on, before the store gives it an id, a position and a hash.
public struct PendingEvent: Sendable, Hashable {
    public var stream: String
    public var type: EventType
    public var payload: JSONValue
    public var session: String?
    public var cause: String
    /// Attachment bytes to store content-addressed with the event.
    public var blob: [UInt8]?

    public init(stream: String, type: EventType, payload: JSONValue, session: String?, cause: String, blob: [UInt8]? = nil) {
        self.stream = stream; self.type = type; self.payload = payload; self.session = session; self.cause = cause; self.blob = blob
    }
}
