/// An event the state machine decided on, before the store gives it an id, a position and a hash.
public struct PendingEvent: Sendable {
    public var stream: String
    /// What it says (its type is the body's).
    public var body: EventBody
    public var session: String?
    public var cause: String
    /// Attachment bytes to store content-addressed with the event.
    public var blob: [UInt8]?

    public init(stream: String, body: EventBody, session: String?, cause: String, blob: [UInt8]? = nil) {
        self.stream = stream; self.body = body; self.session = session; self.cause = cause; self.blob = blob
    }

    public init(stream: String, _ payload: some EventPayload, session: String?, cause: String, blob: [UInt8]? = nil) {
        self.init(stream: stream, body: payload.body, session: session, cause: cause, blob: blob)
    }
}
