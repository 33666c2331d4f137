import EditLogCore

/// What a resolution by hand takes.
public enum ConflictChoice: Sendable, Hashable {
    case local, remote, base
    case value(JSONValue)

    public var name: String {
        switch self {
        case .local: "local"
        case .remote: "remote"
        case .base: "base"
        case .value: "value"
        }
    }

    /// The value this choice takes for `c`, as the conflict recorded it (not validated).
    public func value(in c: Conflict) -> JSONValue {
        switch self {
        case .local: c.local.value
        case .remote: c.remote.value
        case .base: c.base
        case .value(let v): v
        }
    }
}

extension Conflict {
    /// The field whose value a resolution by hand writes: a field or create-create conflict's, except the geometry. Nil
    /// for the others, which a resolution only closes as this log holds them.
    public var resolvableField: String? {
        guard kind == .field || kind == .createCreate, let field, field != MergeEngine.geometryField else { return nil }
        return field
    }
}
