import Foundation

/// Who and when, as the client says.
public struct EventContext: Sendable, Hashable {
    public var actor: String
    public var device: String
    /// Client time, normalized ISO-8601 (or nil when the client gave none).
    public var clientTime: String?
    public init(actor: String, device: String, clientTime: String?) {
        self.actor = actor; self.device = device; self.clientTime = clientTime
    }
}

/// An event not yet in the log (Eventuous' "new event"): no position, no hash.
public struct NewEvent: Sendable, Hashable {
    public var id: UUID
    public var stream: String
    public var type: EventType
    public var payload: JSONValue
    public var context: EventContext
    public var session: String?
    public var cause: String

    public init(id: UUID, stream: String, type: EventType, payload: JSONValue, context: EventContext, session: String?, cause: String) {
        self.id = id; self.stream = stream; self.type = type; self.payload = payload
        self.context = context; self.session = session; self.cause = cause
    }
}

/// Where an event was first recorded; kept forever as it travels between logs.
public struct EventOrigin: Sendable, Hashable {
    public var logId: String
    public var position: Int64
    public var hash: [UInt8]
    public init(logId: String, position: Int64, hash: [UInt8]) { self.logId = logId; self.position = position; self.hash = hash }
}

/// An event in the log.
///
/// Its position, stream version, id and hash are stored inline; the rest of what it says (stream, type, payload,
/// who, when, why, origin) sits in one shared, immutable box. A copy, which an event gets many times on its way from
/// a bundle's reading thread through the merge, the appender and the projector, is then two reference counts (the box
/// and the hash), not one per text (about twelve); and an import re-numbering an event in place (`Appender`'s
/// `appendImported(_:canonicalPayload:…)`) changes inline values only. Setting a boxed value makes a new box.
public struct RecordedEvent: Sendable, Hashable {
    public var position: Int64
    public var id: UUID
    public var streamVersion: Int64
    public var hash: [UInt8]
    /// What the event says; never changed once made (`let`s: a field read from it needs no retain).
    @usableFromInline final class Facts: Sendable {
        @usableFromInline let stream: String
        @usableFromInline let type: String
        @usableFromInline let payload: JSONValue
        @usableFromInline let actor: String
        @usableFromInline let device: String
        @usableFromInline let session: String?
        @usableFromInline let cause: String
        @usableFromInline let clientTime: String?
        @usableFromInline let recordedTime: String
        @usableFromInline let origin: EventOrigin

        @usableFromInline init(stream: String, type: String, payload: JSONValue, actor: String, device: String, session: String?, cause: String,
                               clientTime: String?, recordedTime: String, origin: EventOrigin) {
            self.stream = stream; self.type = type; self.payload = payload; self.actor = actor; self.device = device; self.session = session
            self.cause = cause; self.clientTime = clientTime; self.recordedTime = recordedTime; self.origin = origin
        }

        /// A copy with one value changed by `change` (setters only: rare).
        func with(_ change: (inout Values) -> Void) -> Facts {
            var v = Values(stream: stream, type: type, payload: payload, actor: actor, device: device, session: session, cause: cause,
                           clientTime: clientTime, recordedTime: recordedTime, origin: origin)
            change(&v)
            return Facts(stream: v.stream, type: v.type, payload: v.payload, actor: v.actor, device: v.device, session: v.session, cause: v.cause,
                         clientTime: v.clientTime, recordedTime: v.recordedTime, origin: v.origin)
        }

        struct Values {
            var stream: String, type: String, payload: JSONValue, actor: String, device: String, session: String?, cause: String
            var clientTime: String?, recordedTime: String, origin: EventOrigin
        }
    }
    @usableFromInline var facts: Facts

    public var stream: String { @inlinable get { facts.stream } set { facts = facts.with { $0.stream = newValue } } }
    public var type: String { @inlinable get { facts.type } set { facts = facts.with { $0.type = newValue } } }
    public var payload: JSONValue { @inlinable get { facts.payload } set { facts = facts.with { $0.payload = newValue } } }
    public var actor: String { @inlinable get { facts.actor } set { facts = facts.with { $0.actor = newValue } } }
    public var device: String { @inlinable get { facts.device } set { facts = facts.with { $0.device = newValue } } }
    public var session: String? { @inlinable get { facts.session } set { facts = facts.with { $0.session = newValue } } }
    public var cause: String { @inlinable get { facts.cause } set { facts = facts.with { $0.cause = newValue } } }
    public var clientTime: String? { @inlinable get { facts.clientTime } set { facts = facts.with { $0.clientTime = newValue } } }
    public var recordedTime: String { @inlinable get { facts.recordedTime } set { facts = facts.with { $0.recordedTime = newValue } } }
    public var origin: EventOrigin { @inlinable get { facts.origin } set { facts = facts.with { $0.origin = newValue } } }

    public init(position: Int64, id: UUID, stream: String, streamVersion: Int64, type: String, payload: JSONValue,
                actor: String, device: String, session: String?, cause: String, clientTime: String?, recordedTime: String,
                origin: EventOrigin, hash: [UInt8]) {
        self.position = position; self.id = id; self.streamVersion = streamVersion; self.hash = hash
        facts = Facts(stream: stream, type: type, payload: payload, actor: actor, device: device, session: session, cause: cause,
                      clientTime: clientTime, recordedTime: recordedTime, origin: origin)
    }

    /// Equal when every value is.
    public static func == (a: RecordedEvent, b: RecordedEvent) -> Bool {
        guard a.position == b.position, a.id == b.id, a.streamVersion == b.streamVersion, a.hash == b.hash else { return false }
        if a.facts === b.facts { return true }
        let x = a.facts, y = b.facts
        return x.stream == y.stream && x.type == y.type && x.payload == y.payload && x.actor == y.actor && x.device == y.device
            && x.session == y.session && x.cause == y.cause && x.clientTime == y.clientTime && x.recordedTime == y.recordedTime && x.origin == y.origin
    }

    public func hash(into h: inout Hasher) {
        h.combine(position); h.combine(id); h.combine(streamVersion); h.combine(hash)
        let x = facts
        h.combine(x.stream); h.combine(x.type); h.combine(x.payload); h.combine(x.actor); h.combine(x.device); h.combine(x.session)
        h.combine(x.cause); h.combine(x.clientTime); h.combine(x.recordedTime); h.combine(x.origin)
    }

    public var eventType: EventType? { EventType(rawValue: type) }

    /// The event as one JSON object (the `log --json` line; schema `schemas/recorded-event.schema.json`).
    public var json: JSONValue {
        .object([
            "position": .int(position), "id": .string(id.lowercasedString), "stream": .string(stream),
            "streamVersion": .int(streamVersion), "type": .string(type), "payload": payload,
            "actor": .string(actor), "device": .string(device), "session": JSONValue(session), "cause": .string(cause),
            "clientTime": JSONValue(clientTime), "recordedTime": .string(recordedTime),
            "origin": .object(["logId": .string(origin.logId), "position": .int(origin.position), "hash": .string(Hex.encode(origin.hash))]),
            "hash": .string(Hex.encode(hash)),
        ])
    }
}

/// Optimistic concurrency for a stream append.
public enum ExpectedVersion: Sendable, Hashable {
    case any
    case noStream
    case exact(Int64)
}

public enum Hex {
    /// Lowercase hex of a byte array, written straight into the string's storage. Callers in other modules got the
    /// generic version below unspecialized (about 18k instructions for a 32-byte hash: 7% of a bundle export).
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            bytes.withUnsafeBytes { write($0, to: out.baseAddress!) }
            return bytes.count * 2
        }
    }

    /// Writes the lowercase hex of `bytes` (two digits each) at `out`.
    public static func write(_ bytes: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        pairs.withUnsafeBufferPointer { pairs in
            let o = UnsafeMutableRawPointer(out)
            for i in 0..<bytes.count {
                o.storeBytes(of: pairs[Int(source.load(fromByteOffset: i, as: UInt8.self))].littleEndian, toByteOffset: 2 * i, as: UInt16.self)
            }
        }
    }

    /// Writes the two lowercase hex digits of `byte` at `out`.
    @inlinable public static func write(_ byte: UInt8, to out: UnsafeMutablePointer<UInt8>) {
        out[0] = digit(byte >> 4)
        out[1] = digit(byte & 0xF)
    }

    /// The lowercase hex digit of `v` (0...15).
    @inlinable static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    /// Each byte's two digits, the high one in the low byte (so a little-endian store writes them in order).
    static let pairs: [UInt16] = (0..<256).map { UInt16(digit(UInt8($0 >> 4))) | UInt16(digit(UInt8($0 & 0xF))) << 8 }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
    /// The bytes of a hex string (either case); nil for an odd length or a character that is not a hex digit.
    /// Reads a native string's UTF-8 in place and writes the bytes straight into the array's storage (a bundle's
    /// reading thread decodes three hashes per event: the copy and the appends were half its hex time).
    public static func decode(_ s: String) -> [UInt8]? {
        if let done = s.utf8.withContiguousStorageIfAvailable({ decode(utf8: $0) }) { return done }
        return Array(s.utf8).withUnsafeBufferPointer { decode(utf8: $0) }
    }

    /// The bytes of hex digits given as UTF-8 (either case); nil as for `decode(_:)`.
    public static func decode(utf8 u: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard u.count % 2 == 0 else { return nil }
        @inline(__always) func v(_ c: UInt8) -> UInt8 {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return 0xFF
            }
        }
        var ok = true
        let out = [UInt8](unsafeUninitializedCapacity: u.count / 2) { buffer, count in
            var i = 0
            while i < u.count {
                let a = v(u[i]), b = v(u[i + 1])
                if a | b > 0xF { ok = false; break }
                buffer[i >> 1] = a << 4 | b
                i += 2
            }
            count = i >> 1
        }
        return ok ? out : nil
    }
}
