import EditLogCore
import Foundation

extension BundleEventLine {
    /// An event line read in the layout `write` gives it.
    struct Decoded {
        var event: RecordedEvent
        var previous: [UInt8]
        /// Where the payload's bytes are in the line.
        var payload: Range<Int>
    }

    /// Reads an event line laid out as `write` writes it (keys in that order, no whitespace, hashes and the id as
    /// plain strings), straight into its event: no object of the line's seventeen keys is built and then looked up
    /// (a large share of a bundle reader's work per event). Every value is read by the JSON parser's own code and
    /// checked as `RecordedEvent(json:)` checks it. Any other layout, and any value that does not pass, answers nil:
    /// the caller then parses the line as JSON, which names what is wrong.
    static func decode(_ line: UnsafeBufferPointer<UInt8>) -> Decoded? {
        var c = JSONCursor(buffer: line)
        func hash(_ c: inout JSONCursor) -> [UInt8]? {
            guard let h = c.plainString(), h.count == 64 else { return nil }
            return Hex.decode(utf8: h)
        }
        guard c.skip("{\"actor\":"), let actor = c.string(),
              c.skip(",\"cause\":"), let cause = c.string(),
              c.skip(",\"clientTime\":"), let clientTime = c.optionalString(),
              c.skip(",\"device\":"), let device = c.string(),
              c.skip(",\"hash\":"), let eventHash = hash(&c),
              c.skip(",\"id\":"), let idText = c.plainString(), let id = UUID(utf8: idText),
              c.skip(",\"origin\":{\"hash\":"), let originHash = hash(&c),
              c.skip(",\"logId\":"), let originLog = c.string(),
              c.skip(",\"position\":"), let originPosition = c.int(),
              c.skip("},\"payload\":"), let (payload, payloadRange) = c.value(),
              c.skip(",\"position\":"), let position = c.int(),
              c.skip(",\"previousHash\":"), let previous = hash(&c),
              c.skip(",\"recordedTime\":"), let recordedTime = c.string(),
              c.skip(",\"session\":"), let session = c.optionalString(),
              c.skip(",\"stream\":"), let stream = c.string(),
              c.skip(",\"streamVersion\":"), let streamVersion = c.int(),
              c.skip(",\"type\":"), let type = c.string(),
              c.skip("}"), c.atEnd else { return nil }
        let e = RecordedEvent(position: position, id: id, stream: stream, streamVersion: streamVersion, type: type, payload: payload,
                              actor: actor, device: device, session: session, cause: cause, clientTime: clientTime, recordedTime: recordedTime,
                              origin: EventOrigin(logId: originLog, position: originPosition, hash: originHash), hash: eventHash)
        return Decoded(event: e, previous: previous, payload: payloadRange)
    }
}
