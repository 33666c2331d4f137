/// A pop-up session opened on a feature: a create (with its geometry, and the parent it is related to) or an edit.
public struct SessionStarted: EventPayload, Hashable {
    public static let eventType = EventType.sessionStarted
    public var layer: Int
    public var globalId: String
    public var kind: SessionState.Kind
    /// A create's geometry (nil when absent or null).
    public var geometry: JSONValue? { didSet { namesGeometry = geometry != nil } }
    /// The payload names a geometry, null included.
    public private(set) var namesGeometry: Bool
    /// A create's parent, through a relationship (its id) to the parent's GlobalID.
    public var parent: (relationship: Int, globalId: String)?

    /// `geometry` nil: none named; `.null`: named as null.
    public init(layer: Int, globalId: String, kind: SessionState.Kind, geometry: JSONValue? = nil, parent: (relationship: Int, globalId: String)? = nil) {
        self.layer = layer; self.globalId = globalId; self.kind = kind; self.parent = parent
        namesGeometry = geometry != nil
        self.geometry = geometry.flatMap { $0.isNull ? nil : $0 }
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        let kindName = try p.string("kind")
        guard let k = SessionState.Kind(rawValue: kindName) else { throw p.corrupt("payload \"kind\" is \"\(kindName)\", not create or edit") }
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); kind = k
        geometry = p.optional("geometry")
        namesGeometry = p.payload["geometry"] != nil
        if let parent = p.optional("parent") {
            guard let r = parent["relationship"]?.intValue, let pg = parent["globalId"]?.stringValue else {
                throw p.corrupt("payload \"parent\" needs an integer relationship and a globalId")
            }
            self.parent = (Int(r), pg)
        }
    }

    public func write(to w: inout PayloadWriter) {
        if namesGeometry { w.value("geometry", geometry ?? .null) }
        w.string("globalId", globalId)
        w.string("kind", kind.rawValue)
        w.int("layer", layer)
        if let parent { w.object("parent") { $0.string("globalId", parent.globalId); $0.int("relationship", parent.relationship) } }
    }

    public var body: EventBody { .sessionStarted(self) }

    public static func == (a: Self, b: Self) -> Bool {
        a.layer == b.layer && a.globalId == b.globalId && a.kind == b.kind && a.geometry == b.geometry && a.namesGeometry == b.namesGeometry
            && a.parent?.relationship == b.parent?.relationship && a.parent?.globalId == b.parent?.globalId
    }
    public func hash(into h: inout Hasher) { h.combine(layer); h.combine(globalId) }
}

/// A value staged for a field in an open session.
public struct AttributeStaged: EventPayload, Hashable {
    public static let eventType = EventType.attributeStaged
    public var field: String
    public var value: JSONValue
    public init(field: String, value: JSONValue) { self.field = field; self.value = value }
    public init(_ p: PayloadReader) throws(EditLogError) {
        guard let v = p.payload["value"] else { throw p.corrupt("payload has no \"value\"") }
        field = try p.string("field"); value = v
    }
    public func write(to w: inout PayloadWriter) { w.string("field", field); w.value("value", value) }
    public var body: EventBody { .attributeStaged(self) }
}

/// A related record staged: through relationship `relationship`, the record `globalId`.
public struct RelationStaged: EventPayload, Hashable {
    public static let eventType = EventType.relationStaged
    public var relationship: Int
    public var globalId: String
    public init(relationship: Int, globalId: String) { self.relationship = relationship; self.globalId = globalId }
    public init(_ p: PayloadReader) throws(EditLogError) { relationship = Int(try p.int("relationship")); globalId = try p.string("globalId") }
    public func write(to w: inout PayloadWriter) { w.string("globalId", globalId); w.int("relationship", relationship) }
    public var body: EventBody { .relationStaged(self) }
}

/// An attachment staged in an open session (its bytes are stored content-addressed with the event).
public struct AttachmentStaged: EventPayload, Hashable {
    public static let eventType = EventType.attachmentStaged
    public var attachment: SessionState.StagedAttachment
    public init(_ attachment: SessionState.StagedAttachment) { self.attachment = attachment }
    public init(_ p: PayloadReader) throws(EditLogError) {
        guard let a = SessionState.StagedAttachment(json: p.payload) else {
            throw p.corrupt("payload is not a staged attachment (attachmentId, name, contentType, size, sha256)")
        }
        attachment = a
    }
    public func write(to w: inout PayloadWriter) { attachment.write(to: &w) }
    public var body: EventBody { .attachmentStaged(self) }
}

extension SessionState.StagedAttachment {
    /// Its members, in key order (a staged attachment's payload, and an entry of a commit's `attachments.added`).
    public func write(to w: inout PayloadWriter) {
        w.string("attachmentId", attachmentId); w.string("contentType", contentType); w.string("name", name)
        w.string("preferredSize", preferredSize); w.string("sha256", sha256); w.int("size", size)
    }
}

/// An attachment's rename staged.
public struct AttachmentRenameStaged: EventPayload, Hashable {
    public static let eventType = EventType.attachmentRenameStaged
    public var attachmentId: String
    public var name: String
    public init(attachmentId: String, name: String) { self.attachmentId = attachmentId; self.name = name }
    public init(_ p: PayloadReader) throws(EditLogError) { attachmentId = try p.string("attachmentId"); name = try p.string("name") }
    public func write(to w: inout PayloadWriter) { w.string("attachmentId", attachmentId); w.string("name", name) }
    public var body: EventBody { .attachmentRenameStaged(self) }
}

/// An attachment's detach staged.
public struct AttachmentDetachStaged: EventPayload, Hashable {
    public static let eventType = EventType.attachmentDetachStaged
    public var attachmentId: String
    public init(attachmentId: String) { self.attachmentId = attachmentId }
    public init(_ p: PayloadReader) throws(EditLogError) { attachmentId = try p.string("attachmentId") }
    public func write(to w: inout PayloadWriter) { w.string("attachmentId", attachmentId) }
    public var body: EventBody { .attachmentDetachStaged(self) }
}

/// An open session taken over (the event's actor and device are the new ones).
public struct SessionResumed: EventPayload, Hashable {
    public static let eventType = EventType.sessionResumed
    public var previousActor: String
    public var previousDevice: String
    public init(previousActor: String, previousDevice: String) { self.previousActor = previousActor; self.previousDevice = previousDevice }
    public init(_ p: PayloadReader) throws(EditLogError) { previousActor = try p.string("previousActor"); previousDevice = try p.string("previousDevice") }
    public func write(to w: inout PayloadWriter) { w.string("previousActor", previousActor); w.string("previousDevice", previousDevice) }
    public var body: EventBody { .sessionResumed(self) }
}

/// A session canceled: how many staged steps it discarded.
public struct SessionCanceled: EventPayload, Hashable {
    public static let eventType = EventType.sessionCanceled
    public var discarded: Int64
    public init(discarded: Int64) { self.discarded = discarded }
    public init(_ p: PayloadReader) throws(EditLogError) { discarded = try p.int("discarded") }
    public func write(to w: inout PayloadWriter) { w.int("discarded", discarded) }
    public var body: EventBody { .sessionCanceled(self) }
}

/// A session abandoned (left open, closed by someone else): who had opened it.
public struct SessionAbandoned: EventPayload, Hashable {
    public static let eventType = EventType.sessionAbandoned
    public var openedBy: String
    public init(openedBy: String) { self.openedBy = openedBy }
    public init(_ p: PayloadReader) throws(EditLogError) { openedBy = try p.string("openedBy") }
    public func write(to w: inout PayloadWriter) { w.string("openedBy", openedBy) }
    public var body: EventBody { .sessionAbandoned(self) }
}

/// A field's changes: the value before and the value after, by field (`{"old": …, "new": …}` in the payload). Read from
/// a payload, it keeps the payload's own object (each member checked to be one), so a replay, which reads every
/// commit, copies nothing; built by a writer, it holds typed pairs.
public struct FieldChanges: Sendable, Hashable {
    public struct Change: Sendable, Hashable {
        public var old: JSONValue
        public var new: JSONValue
        public init(old: JSONValue, new: JSONValue) { self.old = old; self.new = new }
    }
    enum Storage: Sendable {
        /// As read: field to `{"old", "new"}` objects.
        case read([String: JSONValue])
        case built([String: Change])
    }
    var storage: Storage

    public init(_ byField: [String: Change] = [:]) { storage = .built(byField) }

    /// Equal when the same fields change the same way, read or built.
    public static func == (a: Self, b: Self) -> Bool { a.byField == b.byField }
    public func hash(into h: inout Hasher) { h.combine(byField) }

    /// Read from a payload's `changes` object.
    init(_ p: PayloadReader, _ raw: [String: JSONValue]) throws(EditLogError) {
        for (k, c) in raw {
            guard case .object = c else { throw p.corrupt("payload \"changes.\(k)\" is not an object of old and new") }
        }
        storage = .read(raw)
    }

    @inline(__always) static func change(_ v: JSONValue) -> Change { Change(old: v["old"] ?? .null, new: v["new"] ?? .null) }

    public var isEmpty: Bool {
        switch storage { case .read(let r): r.isEmpty; case .built(let b): b.isEmpty }
    }
    public var count: Int {
        switch storage { case .read(let r): r.count; case .built(let b): b.count }
    }
    /// The fields changed, in no particular order.
    public var names: [String] {
        switch storage { case .read(let r): Array(r.keys); case .built(let b): Array(b.keys) }
    }
    public func new(_ field: String) -> JSONValue? { self[field]?.new }
    public subscript(field: String) -> Change? {
        get {
            switch storage { case .read(let r): r[field].map(Self.change); case .built(let b): b[field] }
        }
        set {
            // A writer sets every field of a commit: the built dictionary is changed in place, not copied per field.
            var b: [String: Change]
            if case .built(let built) = storage { b = built } else { b = byField }
            storage = .built([:])
            b[field] = newValue
            storage = .built(b)
        }
    }
    /// Every change, by field.
    public var byField: [String: Change] {
        switch storage { case .read(let r): r.mapValues(Self.change); case .built(let b): b }
    }
    /// Each change in no particular order.
    public func forEach(_ body: (_ field: String, _ old: JSONValue, _ new: JSONValue) throws -> Void) rethrows {
        switch storage {
        case .read(let r): for (k, v) in r { try body(k, v["old"] ?? .null, v["new"] ?? .null) }
        case .built(let b): for (k, c) in b { try body(k, c.old, c.new) }
        }
    }
    /// The first change whose field's lowercased name is `lowercased`.
    public func change(lowercased: String) -> (field: String, change: Change)? {
        switch storage {
        case .read(let r): r.first { $0.key.lowercased() == lowercased }.map { ($0.key, Self.change($0.value)) }
        case .built(let b): b.first { $0.key.lowercased() == lowercased }.map { ($0.key, $0.value) }
        }
    }
    /// Each change in field-name order.
    public var sorted: [(field: String, old: JSONValue, new: JSONValue)] {
        var out: [(field: String, old: JSONValue, new: JSONValue)] = []
        out.reserveCapacity(count)
        forEach { out.append(($0, $1, $2)) }
        return out.sorted { $0.field < $1.field }
    }
    /// The new values, by field.
    public var newValues: [String: JSONValue] {
        switch storage { case .read(let r): r.mapValues { $0["new"] ?? .null }; case .built(let b): b.mapValues(\.new) }
    }

    /// Writes the `changes` object (fields in key order).
    func write(_ k: String, to w: inout PayloadWriter) {
        let all = byField
        w.object(k) { o in
            for f in all.keys.sorted(by: JSONValue.keyOrder) {
                let c = all[f]!
                o.object(f) { $0.value("new", c.new); $0.value("old", c.old) }
            }
        }
    }
}

/// The attachments a commit added, renamed and detached.
public struct AttachmentChanges: Sendable, Hashable {
    public struct Renamed: Sendable, Hashable {
        public var attachmentId: String; public var old: JSONValue; public var new: String
        public init(attachmentId: String, old: JSONValue, new: String) { self.attachmentId = attachmentId; self.old = old; self.new = new }
    }
    public struct Removed: Sendable, Hashable {
        public var attachmentId: String; public var name: JSONValue
        public init(attachmentId: String, name: JSONValue) { self.attachmentId = attachmentId; self.name = name }
    }
    public var added: [SessionState.StagedAttachment] = []
    public var renamed: [Renamed] = []
    public var removed: [Removed] = []
    public var isEmpty: Bool { added.isEmpty && renamed.isEmpty && removed.isEmpty }

    public init(added: [SessionState.StagedAttachment] = [], renamed: [Renamed] = [], removed: [Removed] = []) {
        self.added = added; self.renamed = renamed; self.removed = removed
    }

    init(_ p: PayloadReader) throws(EditLogError) {
        let atts = try p.object("attachments")
        for a in try p.array("added", in: atts, parentKey: "attachments") {
            guard let s = SessionState.StagedAttachment(json: a) else { throw p.corrupt("payload \"attachments.added\" holds an entry that is not an attachment") }
            added.append(s)
        }
        for r in try p.array("renamed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue, let name = r["new"]?.stringValue else {
                throw p.corrupt("payload \"attachments.renamed\" needs attachmentId and new")
            }
            renamed.append(Renamed(attachmentId: id, old: r["old"] ?? .null, new: name))
        }
        for r in try p.array("removed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue else { throw p.corrupt("payload \"attachments.removed\" needs attachmentId") }
            removed.append(Removed(attachmentId: id, name: r["name"] ?? .null))
        }
    }

    func write(to w: inout PayloadWriter) {
        w.object("attachments") { o in
            o.objects("added", added) { $1.write(to: &$0) }
            o.objects("removed", removed) { $0.string("attachmentId", $1.attachmentId); $0.value("name", $1.name) }
            o.objects("renamed", renamed) { $0.string("attachmentId", $1.attachmentId); $0.string("new", $1.new); $0.value("old", $1.old) }
        }
    }
}

/// A pop-up session's commit: what it changed of its feature and of the feature's attachments.
public struct SessionCommitted: EventPayload, Hashable {
    public static let eventType = EventType.sessionCommitted
    public var layer: Int
    public var globalId: String
    /// The session created the feature (else it updated it).
    public var isCreate: Bool
    public var changes: FieldChanges
    /// A create's geometry (nil when absent or null).
    public var geometry: JSONValue?
    /// The payload names a geometry, null included (the merge engine tells a null from none).
    public var namesGeometry: Bool
    public var attachments: AttachmentChanges

    public init(layer: Int, globalId: String, isCreate: Bool, changes: FieldChanges, geometry: JSONValue?, attachments: AttachmentChanges) {
        self.layer = layer; self.globalId = globalId; self.isCreate = isCreate; self.changes = changes; self.attachments = attachments
        namesGeometry = geometry != nil
        self.geometry = geometry.flatMap { $0.isNull ? nil : $0 }
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId")
        isCreate = try p.string("kind") == "create"
        changes = try FieldChanges(p, try p.object("changes")); geometry = p.optional("geometry")
        namesGeometry = p.payload["geometry"] != nil
        attachments = try AttachmentChanges(p)
    }

    public func write(to w: inout PayloadWriter) {
        attachments.write(to: &w)
        changes.write("changes", to: &w)
        if namesGeometry { w.value("geometry", geometry ?? .null) }
        w.string("globalId", globalId)
        w.string("kind", isCreate ? "create" : "edit")
        w.int("layer", layer)
    }

    public var body: EventBody { .sessionCommitted(self) }
}
