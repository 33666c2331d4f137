import Foundation

extension RecordedEvent {
    /// The keys of `json`, exactly.
    public static let jsonKeys: Set<String> = ["position", "id", "stream", "streamVersion", "type", "payload", "actor", "device",
                                               "session", "cause", "clientTime", "recordedTime", "origin", "hash"]

    /// The keys of `json`'s `origin`, exactly.
    static let originKeys: Set<String> = ["logId", "position", "hash"]

    /// The exact inverse of `json`: every key required (`session` and `clientTime` may be null), no other key,
    /// hashes as 64 lowercase or uppercase hex digits. Errors are `.invalidInput` naming the key.
    public init(json: JSONValue) throws(EditLogError) {
        guard let o = json.objectValue else { throw EditLogError(.invalidInput, "an event must be a JSON object, not \(json.typeName)") }
        // Checked without a set of the keys per event (a set per event showed in a bundle read's profile); an unknown
        // key is named before a missing one, the first in sorted order.
        func unknownKey(_ keys: some Collection<String>, known: Set<String>, prefix: String) -> EditLogError? {
            keys.filter { !known.contains($0) }.sorted().first.map { EditLogError(.invalidInput, "unknown key \"\(prefix)\($0)\" in an event") }
        }
        if o.count != Self.jsonKeys.count || !o.keys.allSatisfy(Self.jsonKeys.contains),
           let e = unknownKey(o.keys, known: Self.jsonKeys, prefix: "") {
            throw e
        }
        func value(_ k: String) throws(EditLogError) -> JSONValue {
            guard let v = o[k] else { throw EditLogError(.invalidInput, "an event lacks \"\(k)\"") }
            return v
        }
        func string(_ k: String, in obj: JSONValue? = nil, prefix: String = "") throws(EditLogError) -> String {
            let v: JSONValue
            if let obj {
                guard let found = obj[k] else { throw EditLogError(.invalidInput, "an event lacks \"\(prefix)\(k)\"") }
                v = found
            } else {
                v = try value(k)
            }
            guard let s = v.stringValue else { throw EditLogError(.invalidInput, "\"\(prefix)\(k)\" must be a string, not \(v.typeName)") }
            return s
        }
        func optionalString(_ k: String) throws(EditLogError) -> String? {
            let v = try value(k)
            if v.isNull { return nil }
            guard let s = v.stringValue else { throw EditLogError(.invalidInput, "\"\(k)\" must be a string or null, not \(v.typeName)") }
            return s
        }
        func int(_ v: JSONValue, _ k: String) throws(EditLogError) -> Int64 {
            guard case .int(let i) = v else { throw EditLogError(.invalidInput, "\"\(k)\" must be an integer, not \(v.serialized().prefix(40))") }
            return i
        }
        func hash(_ s: String, _ k: String) throws(EditLogError) -> [UInt8] {
            guard s.utf8.count == 64, let h = Hex.decode(s) else { throw EditLogError(.invalidInput, "\"\(k)\" must be 64 hex digits (a SHA-256)") }
            return h
        }
        let idString = try string("id")
        guard let id = UUID(text: idString) else { throw EditLogError(.invalidInput, "\"id\" is not a UUID: \(idString.prefix(40))") }
        let origin = try value("origin")
        guard let originObject = origin.objectValue else { throw EditLogError(.invalidInput, "\"origin\" must be an object, not \(origin.typeName)") }
        if originObject.count != Self.originKeys.count || !originObject.keys.allSatisfy(Self.originKeys.contains),
           let e = unknownKey(originObject.keys, known: Self.originKeys, prefix: "origin.") {
            throw e
        }
        guard let originPosition = origin["position"] else { throw EditLogError(.invalidInput, "an event lacks \"origin.position\"") }
        self.init(
            position: try int(try value("position"), "position"), id: id, stream: try string("stream"),
            streamVersion: try int(try value("streamVersion"), "streamVersion"), type: try string("type"), payload: try value("payload"),
            actor: try string("actor"), device: try string("device"), session: try optionalString("session"), cause: try string("cause"),
            clientTime: try optionalString("clientTime"), recordedTime: try string("recordedTime"),
            origin: EventOrigin(logId: try string("logId", in: origin, prefix: "origin."), position: try int(originPosition, "origin.position"),
                                hash: try hash(try string("hash", in: origin, prefix: "origin."), "origin.hash")),
            hash: try hash(try string("hash"), "hash"))
    }

    /// The columns the chain hash covers, as stored: a locally recorded event stores no origin hash (its origin is
    /// itself, so `origin.hash == hash`); an imported one stores the hash it had in its first log.
    public var hashValues: EventHash.Values { hashValues(payload: canonicalPayload) }

    /// `hashValues` with the payload's canonical bytes given (a caller that has them serializes once).
    public func hashValues(payload canonical: [UInt8]) -> EventHash.Values {
        EventHash.Values(position: position, id: id, stream: stream, streamVersion: streamVersion, type: type, payload: canonical,
                         actor: actor, device: device, session: session, cause: cause, clientTime: clientTime, recordedTime: recordedTime,
                         originLog: origin.logId, originPosition: origin.position, originHash: origin.hash == hash ? nil : origin.hash)
    }

    /// Whether `hash` is this event's chain hash after `previous` (the hash of the event before it in its log).
    /// `payload`, when given, must be `canonicalPayload`.
    public func chainHashMatches(previous: [UInt8], payload canonical: [UInt8]? = nil, using encoder: inout EventHash.Encoder) -> Bool {
        EventHash.compute(using: &encoder, previous: previous, hashValues(payload: canonical ?? canonicalPayload)) == hash
    }
}
