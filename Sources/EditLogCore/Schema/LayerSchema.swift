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
    public var names: [String]
    public init(_ string: String) {
        names = string.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
    public func has(_ n: String) -> Bool { names.contains { $0.caseInsensitiveCompare(n) == .orderedSame } }
    private var granular: Bool { has("Create") || has("Update") || has("Delete") }
    /// A service that says only "Editing" allows every edit (older servers); otherwise each verb must be listed.
    public var canCreate: Bool { has("Create") || (has("Editing") && !granular) }
    public var canUpdate: Bool { has("Update") || (has("Editing") && !granular) }
    public var canDelete: Bool { has("Delete") || (has("Editing") && !granular) }
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
    public var fieldInfos: [PopupFieldInfo]
    public func fieldInfo(_ name: String) -> PopupFieldInfo? {
        fieldInfos.first { $0.fieldName.caseInsensitiveCompare(name) == .orderedSame }
    }
}

public struct LayerSchema: Sendable, Hashable {
    public var id: Int
    public var name: String
    public var isTable: Bool
    public var geometryType: String?
    public var objectIdField: String?
    public var globalIdField: String?
    public var displayField: String?
    public var hasAttachments: Bool
    public var capabilities: Capabilities
    public var editFieldsInfo: EditFieldsInfo?
    public var fields: [FieldSchema]
    public var relationships: [RelationshipSchema]
    /// The web map's pop-up; nil when the layer has none (then it cannot be edited).
    public var popup: PopupInfo?

    public func field(_ name: String) -> FieldSchema? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    public func relationship(_ ref: String) -> RelationshipSchema? {
        if let id = Int(ref), let r = relationships.first(where: { $0.id == id }) { return r }
        return relationships.first { !$0.name.isEmpty && $0.name.caseInsensitiveCompare(ref) == .orderedSame }
    }

    /// Fields kept in projection columns: everything but the ObjectID, the GlobalID and geometry.
    public var attributeFields: [FieldSchema] {
        fields.filter { f in
            f.type != .oid && f.type != .globalID && f.type != .geometry
                && f.name.caseInsensitiveCompare(objectIdField ?? "") != .orderedSame
                && f.name.caseInsensitiveCompare(globalIdField ?? "") != .orderedSame
        }
    }

    public func isEditorTrackingField(_ name: String) -> Bool {
        editFieldsInfo?.all.contains { $0.caseInsensitiveCompare(name) == .orderedSame } ?? false
    }
}
