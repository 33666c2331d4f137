/// Writes an event payload's canonical bytes straight from its typed body: the bytes `JSONValue.serializedBytes()`
/// gives for the same object (compact, keys in UTF-8 byte order), with no JSON tree in between. The body writes its
/// members in key order; a debug build checks that order, and `EventCodecTests` checks every type's bytes against
/// the stored ones.
public struct PayloadWriter {
    public private(set) var bytes: [UInt8]
    private var members = 0
    #if DEBUG
    private var lastKey: String?
    #endif

    /// An object's opening brace written to `bytes`, which is taken over (moved, not copied).
    init(taking bytes: inout [UInt8]) {
        self.bytes = []
        swap(&self.bytes, &bytes)
        self.bytes.append(UInt8(ascii: "{"))
    }

    /// An empty payload buffer, for one event's bytes.
    public init() {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(192)
    }

    /// The closing brace written, and the bytes.
    public mutating func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func key(_ k: String) {
        #if DEBUG
        if let lastKey { assert(JSONValue.keyOrder(lastKey, k), "payload member \"\(k)\" written after \"\(lastKey)\"; members go in key order") }
        lastKey = k
        #endif
        if members > 0 { bytes.append(UInt8(ascii: ",")) }
        members += 1
        JSONValue.writeString(k, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func int(_ k: String, _ v: Int64) { key(k); JSONValue.writeInt(v, to: &bytes) }
    public mutating func int(_ k: String, _ v: Int) { int(k, Int64(v)) }
    public mutating func string(_ k: String, _ v: String) { key(k); JSONValue.writeString(v, to: &bytes) }
    public mutating func bool(_ k: String, _ v: Bool) { key(k); bytes.append(contentsOf: (v ? "true" : "false").utf8) }
    public mutating func value(_ k: String, _ v: JSONValue) { key(k); v.write(to: &bytes) }

    /// A member written only when present (nil: absent, not null).
    public mutating func string(_ k: String, ifPresent v: String?) { if let v { string(k, v) } }
    public mutating func int(_ k: String, ifPresent v: Int64?) { if let v { int(k, v) } }
    public mutating func value(_ k: String, ifPresent v: JSONValue?) { if let v { value(k, v) } }
    /// `true` written only when set (the payloads' flags are absent when false).
    public mutating func flag(_ k: String, _ v: Bool) { if v { bool(k, true) } }
    /// A string or null.
    public mutating func stringOrNull(_ k: String, _ v: String?) { if let v { string(k, v) } else { value(k, .null) } }
    public mutating func intOrNull(_ k: String, _ v: Int64?) { if let v { int(k, v) } else { value(k, .null) } }

    /// An object member whose members `body` writes (in key order).
    public mutating func object(_ k: String, _ body: (inout PayloadWriter) -> Void) {
        key(k)
        var inner = PayloadWriter(taking: &bytes)
        body(&inner)
        bytes = inner.finish()
    }

    /// An array member: each element written by `element` (an object per element).
    public mutating func objects<S: Sequence>(_ k: String, _ items: S, _ element: (inout PayloadWriter, S.Element) -> Void) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        var n = 0
        for item in items {
            if n > 0 { bytes.append(UInt8(ascii: ",")) }
            n += 1
            var inner = PayloadWriter(taking: &bytes)
            element(&inner, item)
            bytes = inner.finish()
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// An array of strings.
    public mutating func strings(_ k: String, _ items: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (n, s) in items.enumerated() {
            if n > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.writeString(s, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

/// One event type's payload, typed: read from a payload (`init(_:)`, `.corrupt` naming what is missing) and written
/// to the canonical bytes (`write(to:)`), in one place per type. Stored bytes are never re-encoded: an event is written
/// once, at append, from its body.
public protocol EventPayload: Sendable {
    static var eventType: EventType { get }
    init(_ p: PayloadReader) throws(EditLogError)
    /// Writes the members, in key order.
    func write(to w: inout PayloadWriter)
    /// This payload as an event body.
    var body: EventBody { get }
}
