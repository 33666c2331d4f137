import Foundation

public enum RelationshipRole: String, Sendable, Hashable {
    case origin = "esriRelRoleOrigin"
    case destination = "esriRelRoleDestination"
    case unknown = ""
}

public enum RelationshipCardinality: String, Sendable, Hashable {
    case oneToOne = "esriRelCardinalityOneToOne"
    case oneToMany = "esriRelCardinalityOneToMany"
    case manyToMany = "esriRelCardinalityManyToMany"
    case unknown = ""
}

/// One side of a relationship class, as a layer definition lists it.
public struct RelationshipSchema: Sendable, Hashable {
    public var id: Int
    public var name: String
    public var relatedTableId: Int
    public var cardinality: RelationshipCardinality
    public var role: RelationshipRole
    /// Origin side: the origin's primary key. Destination side: the foreign key that points at the origin.
    public var keyField: String?
    public var composite: Bool
}

public struct Capabilities: Sendable, Hashable {
    public let names: [String]
    public let canCreate: Bool
    public let canUpdate: Bool
    public let canDelete: Bool

    public init(_ string: String) {
        names = string.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let set = Set(names.map { $0.lowercased() })
        let granular = set.contains("create") || set.contains("update") || set.contains("delete")
        // A service that says only "Editing" allows every edit (older servers); otherwise each verb must be listed.
        canCreate = set.contains("create") || (set.contains("editing") && !granular)
        canUpdate = set.contains("update") || (set.contains("editing") && !granular)
        canDelete = set.contains("delete") || (set.contains("editing") && !granular)
    }
}

public struct EditFieldsInfo: Sendable, Hashable {
    public var creationDateField: String?
    public var creatorField: String?
    public var editDateField: String?
    public var editorField: String?
    public var all: [String] { [creationDateField, creatorField, editDateField, editorField].compactMap { $0 } }
}

public struct PopupFieldInfo: Sendable, Hashable {
    public var fieldName: String
    public var label: String?
    public var isEditable: Bool
    public var visible: Bool
}

public struct PopupInfo: Sendable, Hashable {
    public var title: String?
    public var fieldInfos: [PopupFieldInfo] { didSet { index = PopupInfo.makeIndex(fieldInfos) } }
    private var index: [String: Int]

    public init(title: String?, fieldInfos: [PopupFieldInfo]) {
        self.title = title
        self.fieldInfos = fieldInfos
        index = PopupInfo.makeIndex(fieldInfos)
    }

    static func makeIndex(_ infos: [PopupFieldInfo]) -> [String: Int] {
        var d: [String: Int] = [:]
        for (i, f) in infos.enumerated() where d[f.fieldName.lowercased()] == nil { d[f.fieldName.lowercased()] = i }
        return d
    }

    public func fieldInfo(_ name: String) -> PopupFieldInfo? { index[name.lowercased()].map { fieldInfos[$0] } }
}

/// A layer or table. Field lookups are case-insensitive (as ArcGIS's are) and go through an index built
/// once, so the hot paths (validation, projections) never scan or fold strings per call.
public struct LayerSchema: Sendable, Hashable {
    public var id: Int
    public var name: String
    public var isTable: Bool
    public var geometryType: String?
    public var objectIdField: String? { didSet { reindex() } }
    public var globalIdField: String? { didSet { reindex() } }
    public var displayField: String?
    public var hasAttachments: Bool
    public var capabilities: Capabilities
    public var editFieldsInfo: EditFieldsInfo? { didSet { reindex() } }
    public var fields: [FieldSchema] { didSet { reindex() } }
    public var relationships: [RelationshipSchema]
    /// The web map's pop-up; nil when the layer has none (then it cannot be edited).
    public var popup: PopupInfo?

    /// Fields kept in projection columns: everything but the ObjectID, the GlobalID and geometry.
    public private(set) var attributeFields: [FieldSchema] = []
    private var exact: [String: Int] = [:]
    private var folded: [String: Int] = [:]
    private var editorTracking: Set<String> = []

    public init(id: Int, name: String, isTable: Bool, geometryType: String?, objectIdField: String?, globalIdField: String?,
                displayField: String?, hasAttachments: Bool, capabilities: Capabilities, editFieldsInfo: EditFieldsInfo?,
                fields: [FieldSchema], relationships: [RelationshipSchema], popup: PopupInfo?) {
        self.id = id; self.name = name; self.isTable = isTable; self.geometryType = geometryType
        self.objectIdField = objectIdField; self.globalIdField = globalIdField; self.displayField = displayField
        self.hasAttachments = hasAttachments; self.capabilities = capabilities; self.editFieldsInfo = editFieldsInfo
        self.fields = fields; self.relationships = relationships; self.popup = popup
        reindex()
    }

    private mutating func reindex() {
        exact = [:]; folded = [:]
        for (i, f) in fields.enumerated() {
            if exact[f.name] == nil { exact[f.name] = i }
            if folded[f.name.lowercased()] == nil { folded[f.name.lowercased()] = i }
        }
        let oid = objectIdField?.lowercased(), gid = globalIdField?.lowercased()
        attributeFields = fields.filter { f in
            f.type != .oid && f.type != .globalID && f.type != .geometry && f.name.lowercased() != oid && f.name.lowercased() != gid
        }
        editorTracking = Set((editFieldsInfo?.all ?? []).map { $0.lowercased() })
    }

    public func field(_ name: String) -> FieldSchema? {
        if let i = exact[name] ?? folded[name.lowercased()] { return fields[i] }
        return nil
    }

    /// The field named `name`, or nil when there is no name. Use it instead of `name.flatMap(layer.field)`: that
    /// method reference is a closure holding a copy of the whole layer, made and destroyed on every call.
    public func field(named name: String?) -> FieldSchema? {
        guard let name else { return nil }
        return field(name)
    }

    public func relationship(_ ref: String) -> RelationshipSchema? {
        if let id = Int(ref), let r = relationships.first(where: { $0.id == id }) { return r }
        let key = ref.lowercased()
        return relationships.first { !$0.name.isEmpty && $0.name.lowercased() == key }
    }

    public func isEditorTrackingField(_ name: String) -> Bool {
        !editorTracking.isEmpty && editorTracking.contains(name.lowercased())
    }
}
