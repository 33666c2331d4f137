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
///
/// Its values live in one shared, immutable box: a copy (the schema hands out one per lookup, the projector and the
/// import take one per event) is one reference count, not one per field, array and index (about twenty). A setter
/// makes a new box, with its indexes built again.
public struct LayerSchema: Sendable, Hashable {
    /// What the layer's definition says.
    struct Declared: Sendable, Hashable {
        var id: Int
        var name: String
        var isTable: Bool
        var geometryType: String?
        var objectIdField: String?
        var globalIdField: String?
        var displayField: String?
        var hasAttachments: Bool
        var capabilities: Capabilities
        var editFieldsInfo: EditFieldsInfo?
        var fields: [FieldSchema]
        var relationships: [RelationshipSchema]
        var popup: PopupInfo?
    }

    /// The declared values and the indexes built from them, never changed once made.
    final class Storage: Sendable {
        let declared: Declared
        /// Fields kept in projection columns (`attributeFields`).
        let attributeFields: [FieldSchema]
        /// Field index by exact name, and by lowercased name.
        let exact: [String: Int], folded: [String: Int]
        /// Editor-tracking field names, lowercased.
        let editorTracking: Set<String>

        init(_ d: Declared) {
            declared = d
            var exact: [String: Int] = [:], folded: [String: Int] = [:]
            for (i, f) in d.fields.enumerated() {
                if exact[f.name] == nil { exact[f.name] = i }
                if folded[f.name.lowercased()] == nil { folded[f.name.lowercased()] = i }
            }
            (self.exact, self.folded) = (exact, folded)
            let oid = d.objectIdField?.lowercased(), gid = d.globalIdField?.lowercased()
            attributeFields = d.fields.filter { f in
                f.type != .oid && f.type != .globalID && f.type != .geometry && f.name.lowercased() != oid && f.name.lowercased() != gid
            }
            editorTracking = Set((d.editFieldsInfo?.all ?? []).map { $0.lowercased() })
        }
    }
    private var storage: Storage

    /// A new box with `change` applied to the declared values.
    private mutating func change(_ body: (inout Declared) -> Void) {
        var d = storage.declared
        body(&d)
        storage = Storage(d)
    }

    public var id: Int { get { storage.declared.id } set { change { $0.id = newValue } } }
    public var name: String { get { storage.declared.name } set { change { $0.name = newValue } } }
    public var isTable: Bool { get { storage.declared.isTable } set { change { $0.isTable = newValue } } }
    public var geometryType: String? { get { storage.declared.geometryType } set { change { $0.geometryType = newValue } } }
    public var objectIdField: String? { get { storage.declared.objectIdField } set { change { $0.objectIdField = newValue } } }
    public var globalIdField: String? { get { storage.declared.globalIdField } set { change { $0.globalIdField = newValue } } }
    public var displayField: String? { get { storage.declared.displayField } set { change { $0.displayField = newValue } } }
    public var hasAttachments: Bool { get { storage.declared.hasAttachments } set { change { $0.hasAttachments = newValue } } }
    public var capabilities: Capabilities { get { storage.declared.capabilities } set { change { $0.capabilities = newValue } } }
    public var editFieldsInfo: EditFieldsInfo? { get { storage.declared.editFieldsInfo } set { change { $0.editFieldsInfo = newValue } } }
    public var fields: [FieldSchema] { get { storage.declared.fields } set { change { $0.fields = newValue } } }
    public var relationships: [RelationshipSchema] { get { storage.declared.relationships } set { change { $0.relationships = newValue } } }
    /// The web map's pop-up; nil when the layer has none (then it cannot be edited).
    public var popup: PopupInfo? { get { storage.declared.popup } set { change { $0.popup = newValue } } }

    /// Fields kept in projection columns: everything but the ObjectID, the GlobalID and geometry.
    public var attributeFields: [FieldSchema] { storage.attributeFields }

    public init(id: Int, name: String, isTable: Bool, geometryType: String?, objectIdField: String?, globalIdField: String?,
                displayField: String?, hasAttachments: Bool, capabilities: Capabilities, editFieldsInfo: EditFieldsInfo?,
                fields: [FieldSchema], relationships: [RelationshipSchema], popup: PopupInfo?) {
        storage = Storage(Declared(id: id, name: name, isTable: isTable, geometryType: geometryType, objectIdField: objectIdField,
                                   globalIdField: globalIdField, displayField: displayField, hasAttachments: hasAttachments,
                                   capabilities: capabilities, editFieldsInfo: editFieldsInfo, fields: fields, relationships: relationships,
                                   popup: popup))
    }

    /// Equal when the declared values are (the indexes follow from them).
    public static func == (a: LayerSchema, b: LayerSchema) -> Bool {
        a.storage === b.storage || a.storage.declared == b.storage.declared
    }

    public func hash(into h: inout Hasher) { h.combine(storage.declared) }

    public func field(_ name: String) -> FieldSchema? {
        if let i = storage.exact[name] ?? storage.folded[name.lowercased()] { return storage.declared.fields[i] }
        return nil
    }

    /// The field named `name`, or nil when there is no name. Use it instead of `name.flatMap(layer.field)`: that
    /// method reference is a closure holding a copy of the whole layer, made and destroyed on every call.
    public func field(named name: String?) -> FieldSchema? {
        guard let name else { return nil }
        return field(name)
    }

    public func relationship(_ ref: String) -> RelationshipSchema? {
        let relationships = storage.declared.relationships
        if let id = Int(ref), let r = relationships.first(where: { $0.id == id }) { return r }
        let key = ref.lowercased()
        return relationships.first { !$0.name.isEmpty && $0.name.lowercased() == key }
    }

    public func isEditorTrackingField(_ name: String) -> Bool {
        !storage.editorTracking.isEmpty && storage.editorTracking.contains(name.lowercased())
    }
}
