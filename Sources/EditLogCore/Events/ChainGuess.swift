/// An imported event's hash in the importing log, computed ahead on another thread (a bundle's reading thread,
/// `ChainGuesser`) on the guess that the event lands at `position` and `streamVersion`, right after the event whose
/// hash is `previous`. The appender takes `hash` only when all three hold (the rest of what the hash covers is the
/// event's own: id, stream, type, payload, actor, device, session, cause, times, origin); otherwise it computes
/// the hash itself. A wrong guess costs the time it took, never a wrong hash.
public struct ChainGuess: Sendable {
    public var position: Int64
    public var streamVersion: Int64
    public var previous: [UInt8]
    public var hash: [UInt8]

    public init(position: Int64, streamVersion: Int64, previous: [UInt8], hash: [UInt8]) {
        self.position = position
        self.streamVersion = streamVersion
        self.previous = previous
        self.hash = hash
    }
}

/// Guesses, event after event, where an import appends a bundle's events (`ChainGuess`): each right after the one
/// before, from the log's last position and hash; in a stream the log holds, after its last version; in any other
/// stream, at the version the event has in its origin (right when the bundle carries the stream from its start).
public struct ChainGuesser {
    public private(set) var position: Int64
    public private(set) var hash: [UInt8]
    /// The current version of each stream the log held as the import began, raised with each guess in it.
    private var versions: [String: Int64]
    private var encoder = EventHash.Encoder()

    public init(position: Int64, hash: [UInt8], streamVersions: [String: Int64]) {
        self.position = position
        self.hash = hash
        self.versions = streamVersions
    }

    /// The guess for the next event `e` (with its payload's canonical bytes).
    public mutating func next(_ e: RecordedEvent, canonicalPayload: [UInt8]) -> ChainGuess {
        var version = e.streamVersion
        if let v = versions[e.stream] {
            version = v + 1
            versions[e.stream] = version
        }
        let values = EventHash.Values(
            position: position + 1, id: e.id, stream: e.stream, streamVersion: version, type: e.type, payload: canonicalPayload,
            actor: e.actor, device: e.device, session: e.session, cause: e.cause, clientTime: e.clientTime,
            recordedTime: e.recordedTime, originLog: e.origin.logId, originPosition: e.origin.position, originHash: e.origin.hash)
        let guess = ChainGuess(position: values.position, streamVersion: version, previous: hash,
                               hash: EventHash.compute(using: &encoder, previous: hash, values))
        position = guess.position
        hash = guess.hash
        return guess
    }
}
