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
/// Its values live in one shared, copy-on-write box: a copy (the schema hands out one per lookup, the projector and
/// the import take one per event) is one reference count, not one per field, array and index (about twenty).
public struct LayerSchema: Sendable, Hashable {
    /// The stored values. Never changed while shared: every setter makes its copy unique first (`unique()`).
    final class Storage: @unchecked Sendable {
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
        var attributeFields: [FieldSchema] = []
        var exact: [String: Int] = [:]
        var folded: [String: Int] = [:]
        var editorTracking: Set<String> = []

        init(id: Int, name: String, isTable: Bool, geometryType: String?, objectIdField: String?, globalIdField: String?,
             displayField: String?, hasAttachments: Bool, capabilities: Capabilities, editFieldsInfo: EditFieldsInfo?,
             fields: [FieldSchema], relationships: [RelationshipSchema], popup: PopupInfo?) {
            self.id = id; self.name = name; self.isTable = isTable; self.geometryType = geometryType
            self.objectIdField = objectIdField; self.globalIdField = globalIdField; self.displayField = displayField
            self.hasAttachments = hasAttachments; self.capabilities = capabilities; self.editFieldsInfo = editFieldsInfo
            self.fields = fields; self.relationships = relationships; self.popup = popup
        }

        func copy() -> Storage {
            let c = Storage(id: id, name: name, isTable: isTable, geometryType: geometryType, objectIdField: objectIdField,
                            globalIdField: globalIdField, displayField: displayField, hasAttachments: hasAttachments,
                            capabilities: capabilities, editFieldsInfo: editFieldsInfo, fields: fields, relationships: relationships, popup: popup)
            (c.attributeFields, c.exact, c.folded, c.editorTracking) = (attributeFields, exact, folded, editorTracking)
            return c
        }
    }
    private var storage: Storage

    public var id: Int { get { storage.id } set { unique(); storage.id = newValue } }
    public var name: String { get { storage.name } set { unique(); storage.name = newValue } }
    public var isTable: Bool { get { storage.isTable } set { unique(); storage.isTable = newValue } }
    public var geometryType: String? { get { storage.geometryType } set { unique(); storage.geometryType = newValue } }
    public var objectIdField: String? { get { storage.objectIdField } set { unique(); storage.objectIdField = newValue; reindex() } }
    public var globalIdField: String? { get { storage.globalIdField } set { unique(); storage.globalIdField = newValue; reindex() } }
    public var displayField: String? { get { storage.displayField } set { unique(); storage.displayField = newValue } }
    public var hasAttachments: Bool { get { storage.hasAttachments } set { unique(); storage.hasAttachments = newValue } }
    public var capabilities: Capabilities { get { storage.capabilities } set { unique(); storage.capabilities = newValue } }
    public var editFieldsInfo: EditFieldsInfo? { get { storage.editFieldsInfo } set { unique(); storage.editFieldsInfo = newValue; reindex() } }
    public var fields: [FieldSchema] { get { storage.fields } set { unique(); storage.fields = newValue; reindex() } }
    public var relationships: [RelationshipSchema] { get { storage.relationships } set { unique(); storage.relationships = newValue } }
    /// The web map's pop-up; nil when the layer has none (then it cannot be edited).
    public var popup: PopupInfo? { get { storage.popup } set { unique(); storage.popup = newValue } }

    /// Fields kept in projection columns: everything but the ObjectID, the GlobalID and geometry.
    public var attributeFields: [FieldSchema] { storage.attributeFields }

    public init(id: Int, name: String, isTable: Bool, geometryType: String?, objectIdField: String?, globalIdField: String?,
                displayField: String?, hasAttachments: Bool, capabilities: Capabilities, editFieldsInfo: EditFieldsInfo?,
                fields: [FieldSchema], relationships: [RelationshipSchema], popup: PopupInfo?) {
        storage = Storage(id: id, name: name, isTable: isTable, geometryType: geometryType, objectIdField: objectIdField,
                          globalIdField: globalIdField, displayField: displayField, hasAttachments: hasAttachments,
                          capabilities: capabilities, editFieldsInfo: editFieldsInfo, fields: fields, relationships: relationships, popup: popup)
        reindex()
    }

    /// Makes the storage this value's own before a change (copy-on-write).
    private mutating func unique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }

    /// Builds the indexes from the fields (the storage is unique: `init` or a setter made it so).
    private func reindex() {
        var exact: [String: Int] = [:], folded: [String: Int] = [:]
        for (i, f) in storage.fields.enumerated() {
            if exact[f.name] == nil { exact[f.name] = i }
            if folded[f.name.lowercased()] == nil { folded[f.name.lowercased()] = i }
        }
        let oid = storage.objectIdField?.lowercased(), gid = storage.globalIdField?.lowercased()
        storage.attributeFields = storage.fields.filter { f in
            f.type != .oid && f.type != .globalID && f.type != .geometry && f.name.lowercased() != oid && f.name.lowercased() != gid
        }
        (storage.exact, storage.folded) = (exact, folded)
        storage.editorTracking = Set((storage.editFieldsInfo?.all ?? []).map { $0.lowercased() })
    }

    /// Equal when every value is (the indexes follow from them).
    public static func == (a: LayerSchema, b: LayerSchema) -> Bool {
        if a.storage === b.storage { return true }
        let x = a.storage, y = b.storage
        return x.id == y.id && x.name == y.name && x.isTable == y.isTable && x.geometryType == y.geometryType
            && x.objectIdField == y.objectIdField && x.globalIdField == y.globalIdField && x.displayField == y.displayField
            && x.hasAttachments == y.hasAttachments && x.capabilities == y.capabilities && x.editFieldsInfo == y.editFieldsInfo
            && x.fields == y.fields && x.relationships == y.relationships && x.popup == y.popup
    }

    public func hash(into h: inout Hasher) {
        let x = storage
        h.combine(x.id); h.combine(x.name); h.combine(x.isTable); h.combine(x.geometryType); h.combine(x.objectIdField)
        h.combine(x.globalIdField); h.combine(x.displayField); h.combine(x.hasAttachments); h.combine(x.capabilities)
        h.combine(x.editFieldsInfo); h.combine(x.fields); h.combine(x.relationships); h.combine(x.popup)
    }

    public func field(_ name: String) -> FieldSchema? {
        if let i = storage.exact[name] ?? storage.folded[name.lowercased()] { return storage.fields[i] }
        return nil
    }

    /// The field named `name`, or nil when there is no name. Use it instead of `name.flatMap(layer.field)`: that
    /// method reference is a closure holding a copy of the whole layer, made and destroyed on every call.
    public func field(named name: String?) -> FieldSchema? {
        guard let name else { return nil }
        return field(name)
    }

    public func relationship(_ ref: String) -> RelationshipSchema? {
        let relationships = storage.relationships
        if let id = Int(ref), let r = relationships.first(where: { $0.id == id }) { return r }
        let key = ref.lowercased()
        return relationships.first { !$0.name.isEmpty && $0.name.lowercased() == key }
    }

    public func isEditorTrackingField(_ name: String) -> Bool {
        !storage.editorTracking.isEmpty && storage.editorTracking.contains(name.lowercased())
    }
}
