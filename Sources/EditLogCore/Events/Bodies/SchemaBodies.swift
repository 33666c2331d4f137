/// The definitions a schema event holds: the service's ArcGIS REST documents, the web map (pop-ups) and the rules.
public struct SchemaDefinitions: Sendable {
    public var service: [(name: String, json: JSONValue)]
    public var webmap: JSONValue?
    public var rules: JSONValue?

    public init(service: [(name: String, json: JSONValue)], webmap: JSONValue?, rules: JSONValue?) {
        self.service = service; self.webmap = webmap; self.rules = rules
    }

    /// Read from a schema document in `SchemaDefined`'s shape (a bundle's `schema.json`).
    public init(json: JSONValue) throws(EditLogError) {
        try self.init(PayloadReader(json, type: EventType.schemaDefined.rawValue))
    }

    init(_ p: PayloadReader) throws(EditLogError) {
        guard case .object = p.payload else { throw p.corrupt("is not an object of service, webmap and rules") }
        var docs: [(name: String, json: JSONValue)] = []
        for d in p.optional("service")?.arrayValue ?? [] { docs.append((d["name"]?.stringValue ?? "service", d["json"] ?? .null)) }
        service = docs; webmap = p.optional("webmap"); rules = p.optional("rules")
    }

    /// The schema they define.
    public func decode() throws(EditLogError) -> ServiceSchema {
        try ArcGISSchemaDecoder.decode(service: service, webmap: webmap, rules: rules)
    }

    /// The definitions as one JSON document (the service documents, web map and rules), for readers that search them.
    public var document: JSONValue {
        .object(["service": .array(service.map { .object(["json": $0.json, "name": .string($0.name)]) }), "webmap": webmap ?? .null, "rules": rules ?? .null])
    }

    func writeRules(_ w: inout PayloadWriter) { w.value("rules", rules ?? .null) }
    func writeServiceAndWebmap(_ w: inout PayloadWriter, between: (inout PayloadWriter) -> Void) {
        w.objects("service", service) { $0.value("json", $1.json); $0.string("name", $1.name) }
        between(&w)
        w.value("webmap", webmap ?? .null)
    }
}

/// The log's first schema: the definitions it was made with.
public struct SchemaDefined: EventPayload {
    public static let eventType = EventType.schemaDefined
    public var definitions: SchemaDefinitions
    public init(_ definitions: SchemaDefinitions) { self.definitions = definitions }
    public init(_ p: PayloadReader) throws(EditLogError) { definitions = try SchemaDefinitions(p) }
    public func write(to w: inout PayloadWriter) {
        definitions.writeRules(&w)
        definitions.writeServiceAndWebmap(&w) { _ in }
    }
    public var body: EventBody { .schemaDefined(self) }
}

/// A later schema: the whole new definitions, what changed, the local values the change could not keep, and where
/// the definitions came from.
public struct SchemaChanged: EventPayload {
    public static let eventType = EventType.schemaChanged
    public var definitions: SchemaDefinitions
    public var changes: [SchemaChange]
    public var conflicts: [Conflict]
    public var source: String?

    public init(_ definitions: SchemaDefinitions, changes: [SchemaChange], conflicts: [Conflict], source: String?) {
        self.definitions = definitions; self.changes = changes; self.conflicts = conflicts; self.source = source
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        definitions = try SchemaDefinitions(p)
        changes = (p.optional("changes")?.arrayValue ?? []).compactMap(SchemaChange.init(json:))
        var cs: [Conflict] = []
        for c in p.optional("conflicts")?.arrayValue ?? [] {
            do throws(EditLogError) { cs.append(try Conflict(json: c)) } catch { throw p.corrupt(error.message) }
        }
        conflicts = cs
        source = p.optional("source")?.stringValue
    }

    public func write(to w: inout PayloadWriter) {
        w.value("changes", .array(changes.map(\.json)))
        w.value("conflicts", .array(conflicts.map(\.json)))
        definitions.writeRules(&w)
        definitions.writeServiceAndWebmap(&w) { $0.stringOrNull("source", source) }
    }

    public var body: EventBody { .schemaChanged(self) }
}
