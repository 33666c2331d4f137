/// Reads an event payload's fields, throwing `.corrupt` naming the event type, the field and (for a
/// recorded event) the position when one is missing or of the wrong type. Stored events are input: a
/// malformed one is reported, never skipped.
public struct PayloadReader: Sendable {
    public let payload: JSONValue
    public let type: String
    /// The event's position, when it has one (the error's location is built only when there is an error).
    public let position: Int64?

    public init(_ payload: JSONValue, type: String, position: Int64? = nil) {
        self.payload = payload; self.type = type; self.position = position
    }

    public func corrupt(_ message: String) -> EditLogError {
        EditLogError(.corrupt, "\(type) event: \(message)", at: position.map { "position \($0)" })
    }

    func value(_ key: String, _ what: String) throws(EditLogError) -> JSONValue {
        guard let v = payload[key], !v.isNull else { throw corrupt("payload has no \(what) \"\(key)\"") }
        return v
    }

    public func int(_ key: String) throws(EditLogError) -> Int64 {
        guard let i = try value(key, "integer").intValue else { throw corrupt("payload \"\(key)\" is not an integer") }
        return i
    }

    public func string(_ key: String) throws(EditLogError) -> String {
        guard let s = try value(key, "string").stringValue else { throw corrupt("payload \"\(key)\" is not a string") }
        return s
    }

    public func object(_ key: String) throws(EditLogError) -> [String: JSONValue] {
        guard let o = try value(key, "object").objectValue else { throw corrupt("payload \"\(key)\" is not an object") }
        return o
    }

    /// An array member of an object member (`attachments.added`); absent means empty.
    public func array(_ key: String, in parent: [String: JSONValue]?, parentKey: String) throws(EditLogError) -> [JSONValue] {
        guard let v = parent?[key], !v.isNull else { return [] }
        guard let a = v.arrayValue else { throw corrupt("payload \"\(parentKey).\(key)\" is not an array") }
        return a
    }

    /// A member that may be absent or null.
    public func optional(_ key: String) -> JSONValue? {
        guard let v = payload[key], !v.isNull else { return nil }
        return v
    }

}

extension RecordedEvent {
    /// A `.corrupt` error about this event, at its position.
    public func corrupt(_ message: String) -> EditLogError {
        EditLogError(.corrupt, "\(type) event: \(message)", at: "position \(position)")
    }

    /// Layer `id` of `schema`, which this event names; `.corrupt` when there is no schema yet or it lacks the layer.
    public func layer(_ id: Int, in schema: ServiceSchema?) throws(EditLogError) -> LayerSchema {
        guard let schema else { throw corrupt("comes before the log's schema") }
        guard let l = schema.layer(id: id) else { throw corrupt("names layer \(id), which the schema does not have") }
        return l
    }

    /// The session an event belongs to; an error when a session event has none.
    public func requireSession() throws(EditLogError) -> String {
        guard let s = session else { throw corrupt("has no session") }
        return s
    }
}
