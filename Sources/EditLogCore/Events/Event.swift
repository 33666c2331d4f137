import Foundation
import Synchronization

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
public struct NewEvent: Sendable {
    public var id: UUID
    public var stream: String
    /// What it says (its type is the body's).
    public var body: EventBody
    public var context: EventContext
    public var session: String?
    public var cause: String

    public init(id: UUID, stream: String, body: EventBody, context: EventContext, session: String?, cause: String) {
        self.id = id; self.stream = stream; self.body = body
        self.context = context; self.session = session; self.cause = cause
    }

    public var typeName: String { body.typeName }
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
    /// What the event says.
    @usableFromInline struct Facts: Sendable, Hashable {
        @usableFromInline var stream: String
        @usableFromInline var type: String
        @usableFromInline var actor: String
        @usableFromInline var device: String
        @usableFromInline var session: String?
        @usableFromInline var cause: String
        @usableFromInline var clientTime: String?
        @usableFromInline var recordedTime: String
        @usableFromInline var origin: EventOrigin
    }
    /// The facts, never changed once boxed (a `let`: a field read from it needs no retain), and the payload: as read
    /// (`raw`, its body decoded on first use and kept) or as a writer gave it (`given`, no JSON in between).
    @usableFromInline final class Box: Sendable {
        @usableFromInline let facts: Facts
        /// The payload as read (nil: a writer gave the body).
        let raw: JSONValue?
        /// The body: given, or read on first use (one reference, so an event never read for its body stays small).
        let body: Mutex<BodyBox?>
        init(_ facts: Facts, raw: JSONValue?, given: EventBody?) {
            self.facts = facts; self.raw = raw; body = Mutex(given.map { BodyBox(.success($0)) })
        }
        init(_ facts: Facts, raw: JSONValue?, body: BodyBox?) { self.facts = facts; self.raw = raw; self.body = Mutex(body) }
        /// The writer's body, when there is no payload read.
        var given: EventBody? {
            guard raw == nil else { return nil }
            return body.withLock { try? $0?.result.get() }
        }
    }
    /// A body, or why the payload has none.
    final class BodyBox: Sendable {
        let result: Result<EventBody, EditLogError>
        init(_ result: Result<EventBody, EditLogError>) { self.result = result }
    }
    @usableFromInline var box: Box

    /// A new box with `change` applied to the facts (setters only: rare); the payload stays.
    private mutating func change(_ body: (inout Facts) -> Void) {
        var f = box.facts
        body(&f)
        // A read payload's body is read again for the new facts (its type may be the one that changed).
        box = Box(f, raw: box.raw, body: box.raw == nil ? box.body.withLock { $0 } : nil)
    }

    public var stream: String { @inlinable get { box.facts.stream } set { change { $0.stream = newValue } } }
    public var type: String { @inlinable get { box.facts.type } set { change { $0.type = newValue } } }
    /// The payload as JSON (for what shows or exports it whole; readers use `body`). Setting it (tests forging a
    /// payload) drops the body, which is read from the new payload.
    public var payload: JSONValue {
        get { box.raw ?? box.given!.json }
        set { box = Box(box.facts, raw: newValue, given: nil) }
    }

    /// What the event says, typed: the writer's body, or the payload read once (`.corrupt` at this event's position
    /// when it is not what its type says) and kept for every later reader.
    public var body: EventBody {
        get throws(EditLogError) {
            let found = box.body.withLock { cached in
                if let cached { return cached }
                let r: Result<EventBody, EditLogError>
                do throws(EditLogError) { r = .success(try EventBody(type: box.facts.type, payload: box.raw ?? .null, position: position)) } catch { r = .failure(error) }
                let made = BodyBox(r)
                cached = made
                return made
            }
            return try found.result.get()
        }
    }

    /// The body a writer gave (nil for an event read from a log or a bundle: its `body` is read from its payload).
    public var writtenBody: EventBody? { box.given }

    /// The canonical payload bytes: the body's as written, or the payload read, serialized.
    public var canonicalPayload: [UInt8] { box.given?.canonicalBytes ?? box.raw!.serializedBytes() }
    public var actor: String { @inlinable get { box.facts.actor } set { change { $0.actor = newValue } } }
    public var device: String { @inlinable get { box.facts.device } set { change { $0.device = newValue } } }
    public var session: String? { @inlinable get { box.facts.session } set { change { $0.session = newValue } } }
    public var cause: String { @inlinable get { box.facts.cause } set { change { $0.cause = newValue } } }
    public var clientTime: String? { @inlinable get { box.facts.clientTime } set { change { $0.clientTime = newValue } } }
    public var recordedTime: String { @inlinable get { box.facts.recordedTime } set { change { $0.recordedTime = newValue } } }
    public var origin: EventOrigin { @inlinable get { box.facts.origin } set { change { $0.origin = newValue } } }

    public init(position: Int64, id: UUID, stream: String, streamVersion: Int64, type: String, payload: JSONValue,
                actor: String, device: String, session: String?, cause: String, clientTime: String?, recordedTime: String,
                origin: EventOrigin, hash: [UInt8]) {
        self.position = position; self.id = id; self.streamVersion = streamVersion; self.hash = hash
        box = Box(Facts(stream: stream, type: type, actor: actor, device: device, session: session, cause: cause,
                        clientTime: clientTime, recordedTime: recordedTime, origin: origin), raw: payload, given: nil)
    }

    /// An event whose payload is a writer's body (its type is the body's).
    public init(position: Int64, id: UUID, stream: String, streamVersion: Int64, body: EventBody,
                actor: String, device: String, session: String?, cause: String, clientTime: String?, recordedTime: String,
                origin: EventOrigin, hash: [UInt8]) {
        self.position = position; self.id = id; self.streamVersion = streamVersion; self.hash = hash
        // A payload given as stored (`.unknown`) is read by its type's codec when asked, as one read from a log is.
        var raw: JSONValue?, given: EventBody? = body
        if case .unknown(_, let p) = body { raw = p; given = nil }
        box = Box(Facts(stream: stream, type: body.typeName, actor: actor, device: device, session: session, cause: cause,
                        clientTime: clientTime, recordedTime: recordedTime, origin: origin), raw: raw, given: given)
    }

    /// Equal when every value is.
    public static func == (a: RecordedEvent, b: RecordedEvent) -> Bool {
        a.position == b.position && a.id == b.id && a.streamVersion == b.streamVersion && a.hash == b.hash
            && (a.box === b.box || (a.box.facts == b.box.facts && samePayload(a.box, b.box)))
    }

    private static func samePayload(_ a: Box, _ b: Box) -> Bool {
        if let x = a.raw, let y = b.raw { return x == y }
        return (a.given.map(\.canonicalBytes) ?? a.raw!.serializedBytes()) == (b.given.map(\.canonicalBytes) ?? b.raw!.serializedBytes())
    }

    public func hash(into h: inout Hasher) {
        h.combine(position); h.combine(id); h.combine(streamVersion); h.combine(hash); h.combine(box.facts)
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
    /// generic version below unspecialized, many times slower per hash.
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
    /// reading thread decodes three hashes per event: the copy and the appends showed in its profile).
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
