import EditLog
import Foundation

/// The Trees of Portland service definition, changed as an administrator changes a live service between syncs:
/// fields added, removed, widened or retyped, domains extended or narrowed, a table with a relationship added.
struct ServiceEdits {
    var doc: [String: JSONValue]

    static func trees() throws -> ServiceEdits { ServiceEdits(doc: try Fixture.json("service.json").objectValue ?? [:]) }

    var documents: [(name: String, json: JSONValue)] { [("service.json", .object(doc))] }

    /// Changes the layer or table named `name` (`layers` or `tables`).
    mutating func layer(_ name: String, _ body: (inout [String: JSONValue]) -> Void) {
        for key in ["layers", "tables"] {
            guard var list = doc[key]?.arrayValue else { continue }
            for i in list.indices where list[i]["name"]?.stringValue == name {
                var l = list[i].objectValue ?? [:]
                body(&l)
                list[i] = .object(l)
            }
            doc[key] = .array(list)
        }
    }

    mutating func fields(_ layer: String, _ body: (inout [JSONValue]) -> Void) {
        self.layer(layer) { l in
            var f = l["fields"]?.arrayValue ?? []
            body(&f)
            l["fields"] = .array(f)
        }
    }

    mutating func field(_ layer: String, _ name: String, _ body: (inout [String: JSONValue]) -> Void) {
        fields(layer) { fs in
            for i in fs.indices where fs[i]["name"]?.stringValue == name {
                var f = fs[i].objectValue ?? [:]
                body(&f)
                fs[i] = .object(f)
            }
        }
    }

    mutating func addString(_ layer: String, _ name: String, length: Int = 200) {
        fields(layer) { fs in
            fs.append(.object(["name": .string(name), "type": .string("esriFieldTypeString"), "alias": .string(name), "length": .int(Int64(length)),
                               "nullable": .bool(true), "editable": .bool(true)]))
        }
    }

    mutating func remove(_ layer: String, _ name: String) {
        fields(layer) { fs in fs.removeAll { $0["name"]?.stringValue == name } }
    }

    /// Adds a code to a field's coded-value domain.
    mutating func addCode(_ layer: String, _ field: String, _ code: String) {
        self.field(layer, field) { f in
            guard var d = f["domain"]?.objectValue else { return }
            d["codedValues"] = .array((d["codedValues"]?.arrayValue ?? []) + [.object(["name": .string(code), "code": .string(code)])])
            f["domain"] = .object(d)
        }
    }

    /// Drops a code from a field's coded-value domain.
    mutating func dropCode(_ layer: String, _ field: String, _ code: String) {
        self.field(layer, field) { f in
            guard var d = f["domain"]?.objectValue else { return }
            d["codedValues"] = .array((d["codedValues"]?.arrayValue ?? []).filter { $0["code"]?.stringValue != code })
            f["domain"] = .object(d)
        }
    }

    /// A `Stewardship` table (id 4) related to Trees (relationship 2, Trees the origin, keyed on the tree's GlobalID).
    mutating func addStewardshipTable() {
        layer("Trees") { l in
            l["relationships"] = .array((l["relationships"]?.arrayValue ?? []) + [.object([
                "id": .int(2), "name": .string("Tree_Stewardship"), "relatedTableId": .int(4), "cardinality": .string("esriRelCardinalityOneToMany"),
                "role": .string("esriRelRoleOrigin"), "keyField": .string("GlobalID"), "composite": .bool(false)])])
        }
        func f(_ name: String, _ type: String, _ length: Int? = nil) -> JSONValue {
            var o: [String: JSONValue] = ["name": .string(name), "type": .string("esriFieldType" + type), "alias": .string(name),
                                          "nullable": .bool(type != "OID"), "editable": .bool(type != "OID" && type != "GlobalID")]
            if let length { o["length"] = .int(Int64(length)) }
            return .object(o)
        }
        let table: [String: JSONValue] = [
            "id": .int(4), "name": .string("Stewardship"), "type": .string("Table"), "objectIdField": .string("OBJECTID"),
            "globalIdField": .string("GlobalID"), "displayField": .string("Steward"), "hasAttachments": .bool(false),
            "capabilities": .string("Create,Delete,Query,Update,Editing"),
            "fields": .array([f("OBJECTID", "OID"), f("GlobalID", "GlobalID", 38), f("TreeGlobalID", "GUID", 38), f("Steward", "String", 100)]),
            "relationships": .array([.object([
                "id": .int(2), "name": .string("Tree_Stewardship"), "relatedTableId": .int(0), "cardinality": .string("esriRelCardinalityOneToMany"),
                "role": .string("esriRelRoleDestination"), "keyField": .string("TreeGlobalID"), "composite": .bool(false)])]),
        ]
        doc["tables"] = .array((doc["tables"]?.arrayValue ?? []) + [.object(table)])
    }
}
