/// A feature as the baseline (or a service's snapshot) holds it.
public struct FeatureBaselined: EventPayload, Hashable {
    public static let eventType = EventType.featureBaselined
    public var layer: Int
    public var globalId: String
    /// Field name (schema spelling) to value.
    public var attributes: [String: JSONValue]
    /// The geometry (nil when absent or null).
    public var geometry: JSONValue?
    /// The payload names a geometry, null included (the merge engine tells a null from none).
    public var namesGeometry: Bool

    /// `geometry` nil: none named; `.null`: named as null.
    public init(layer: Int, globalId: String, attributes: [String: JSONValue], geometry: JSONValue?) {
        self.layer = layer; self.globalId = globalId; self.attributes = attributes
        namesGeometry = geometry != nil
        self.geometry = geometry.flatMap { $0.isNull ? nil : $0 }
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); attributes = try p.object("attributes"); geometry = p.optional("geometry")
        namesGeometry = p.payload["geometry"] != nil
    }

    public func write(to w: inout PayloadWriter) {
        w.value("attributes", .object(attributes))
        if namesGeometry { w.value("geometry", geometry ?? .null) }
        w.string("globalId", globalId)
        w.int("layer", layer)
    }

    public var body: EventBody { .featureBaselined(self) }
}

/// A feature deleted, with every attribute it had.
public struct FeatureDeleted: EventPayload, Hashable {
    public static let eventType = EventType.featureDeleted
    public var layer: Int
    public var globalId: String
    public var attributes: [String: JSONValue]

    public init(layer: Int, globalId: String, attributes: [String: JSONValue]) { self.layer = layer; self.globalId = globalId; self.attributes = attributes }
    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); attributes = try p.object("attributes")
    }
    public func write(to w: inout PayloadWriter) { w.value("attributes", .object(attributes)); w.string("globalId", globalId); w.int("layer", layer) }
    public var body: EventBody { .featureDeleted(self) }
}

/// Values a rule derived.
public struct FeatureDerived: EventPayload, Hashable {
    public static let eventType = EventType.featureDerived
    public var layer: Int
    public var globalId: String
    public var rule: String?
    public var changes: FieldChanges
    /// The feature the value came from (a rollup's latest child), or the polygon (a point-in-polygon rule's).
    public var from: String?
    public var polygon: String?
    /// Derived again by an import (its source).
    public var importSource: String?
    /// Derived again after an import: the feature's editor tracking stays as it is.
    public var keepsTracking: Bool
    /// The conflict whose resolution by hand this value follows.
    public var conflictId: String?

    public init(layer: Int, globalId: String, rule: String?, changes: FieldChanges, from: String? = nil, polygon: String? = nil) {
        self.layer = layer; self.globalId = globalId; self.rule = rule; self.changes = changes; self.from = from; self.polygon = polygon
        keepsTracking = false
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId"); changes = try FieldChanges(p, try p.object("changes"))
        rule = p.optional("rule")?.stringValue
        from = p.optional("from")?.stringValue
        polygon = p.optional("polygon")?.stringValue
        importSource = p.optional("import")?.stringValue
        keepsTracking = p.payload["keepTracking"] == true
        conflictId = p.optional("conflictId")?.stringValue
    }

    /// The feature or polygon the value came from.
    public var source: String? { from ?? polygon }

    public func write(to w: inout PayloadWriter) {
        changes.write("changes", to: &w)
        w.string("conflictId", ifPresent: conflictId)
        w.string("from", ifPresent: from)
        w.string("globalId", globalId)
        w.string("import", ifPresent: importSource)
        w.flag("keepTracking", keepsTracking)
        w.int("layer", layer)
        w.string("polygon", ifPresent: polygon)
        w.string("rule", ifPresent: rule)
    }

    public var body: EventBody { .featureDerived(self) }
}

/// A conflict re-resolved by hand: the chosen value written (or, without a field, the conflict closed as held).
public struct ConflictResolved: EventPayload, Hashable {
    public static let eventType = EventType.conflictResolved
    public var layer: Int
    public var globalId: String
    public var conflictId: String?
    /// The field written; nil: the conflict is closed as this log holds it, and nothing changes.
    public var field: String?
    public var take: String?
    /// The value taken.
    public var value: JSONValue
    public var changes: FieldChanges

    public init(layer: Int, globalId: String, conflictId: String, field: String?, take: String, value: JSONValue, changes: FieldChanges) {
        self.layer = layer; self.globalId = globalId; self.conflictId = conflictId; self.field = field; self.take = take
        self.value = value; self.changes = changes
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        layer = Int(try p.int("layer")); globalId = try p.string("globalId")
        conflictId = p.optional("conflictId")?.stringValue
        field = p.payload["field"] == nil ? nil : p.optional("field")?.stringValue ?? ""
        take = p.optional("take")?.stringValue
        value = p.payload["value"] ?? .null
        changes = field == nil ? FieldChanges() : try FieldChanges(p, try p.object("changes"))
    }

    public func write(to w: inout PayloadWriter) {
        changes.write("changes", to: &w)
        w.string("conflictId", ifPresent: conflictId)
        w.string("field", ifPresent: field)
        w.string("globalId", globalId)
        w.int("layer", layer)
        w.string("take", ifPresent: take)
        w.value("value", value)
    }

    public var body: EventBody { .conflictResolved(self) }
}
