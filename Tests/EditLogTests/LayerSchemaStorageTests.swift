import EditLog
import Foundation
import Testing

/// `LayerSchema` keeps its values in one shared box (a copy is one reference count): a copy is still a value.
/// Changing a copy leaves the original as it was, rebuilds the copy's own field index, and equality and hashing
/// follow the values, not the box.
@Suite struct LayerSchemaStorageTests {
    func trees() throws -> LayerSchema {
        let schema = try ArcGISSchemaDecoder.decode(service: [(name: "service.json", json: try Fixture.json("service.json"))], webmap: nil, rules: nil)
        return try #require(schema.layer("Trees"))
    }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() throws {
        let original = try trees()
        var copy = original
        #expect(copy == original && copy.hashValue == original.hashValue)
        let extra = FieldSchema(name: "Extra_Note", type: .string, alias: "Note", length: 40)
        copy.fields.append(extra)
        copy.name = "Trees (copy)"
        // The copy's index knows the new field, case-insensitively; the original's does not.
        #expect(copy.field("extra_note")?.name == "Extra_Note")
        #expect(copy.attributeFields.map(\.name).last == "Extra_Note")
        #expect(original.field("extra_note") == nil)
        #expect(original.attributeFields.count == copy.attributeFields.count - 1)
        #expect(original.name == "Trees")
        #expect(copy != original)
        // The same values in a box of its own: equal, and the same hash.
        var back = copy
        back.fields.removeLast()
        back.name = original.name
        #expect(back == original && back.hashValue == original.hashValue)
        #expect(back.field("extra_note") == nil)
    }

    @Test func changingTheKeyFieldsRebuildsTheIndexesOfThatCopyAlone() throws {
        let original = try trees()
        let oid = try #require(original.objectIdField)
        let named = try #require(original.attributeFields.first?.name)
        var copy = original
        // A field named as the ObjectID field leaves the projection's columns: in the copy only.
        copy.objectIdField = named
        #expect(!copy.attributeFields.contains { $0.name == named })
        #expect(original.attributeFields.contains { $0.name == named })
        #expect(original.objectIdField == oid)
        // Editor tracking follows `editFieldsInfo`, per copy.
        let tracked = try #require(original.editFieldsInfo?.all.first)
        copy.editFieldsInfo = nil
        #expect(!copy.isEditorTrackingField(tracked))
        #expect(original.isEditorTrackingField(tracked))
    }
}
