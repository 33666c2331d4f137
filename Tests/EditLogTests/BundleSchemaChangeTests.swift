import EditLog
import Foundation
import Testing

/// Bundles between logs whose schemas changed (issue 56, "Bundles" and "Merge"): an import adopts what the bundle's
/// schema adds (a `SchemaChanged` of the importing log, cause `import:<origin log>`, before the bundle's events), a
/// field removed on one side stays that side's decision, a type change is refused by name with nothing written.
@Suite struct BundleSchemaChangeTests {
    let tree = MergeDevices.tree

    func apply(_ log: EditLog, _ edits: ServiceEdits, actor: String = "admin") throws -> SchemaUpdate {
        try log.changeSchema(service: edits.documents, cause: Cause.schemaApply, source: "service.json", actor: actor, device: "office")
    }

    /// Verify passes and a rebuild gives the same projection, byte for byte.
    func expectSound(_ log: EditLog, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try log.verify().ok, sourceLocation: sourceLocation)
        let digest = try log.projectionDigest()
        try log.rebuild()
        #expect(try log.projectionDigest() == digest, "rebuild equals incremental", sourceLocation: sourceLocation)
    }

    @Test func aFieldAddedOnTheHubArrivesWithItsValuesAndASecondImportChangesNothing() throws {
        let d = TempDir(), hp = TempPath(), dp = TempPath(), tp = TempPath()
        let hub = try MergeDevices.device("hub", hp, seed: 11)
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        _ = try apply(hub, s)
        try MergeDevices.set(hub, tree, [("Notes", #""leaning""#), ("SiteWidth", "7")], at: 5, actor: "hana", session: "h-1")
        _ = try hub.exportBundle(to: d.file("hub.bundle"))
        // schema.json is the hub's schema at the bundle's end (its SchemaChanged), and the reader checks it so.
        #expect(try BundleReader(path: d.file("hub.bundle")).schema["changes"]?.arrayValue?.count == 1)
        _ = try EditLog.verifyBundle(at: d.file("hub.bundle"))

        let device = try MergeDevices.device("device", dp, seed: 12)
        let before = try device.lastPosition()
        let r = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev").report
        #expect(r.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        #expect(r.schemaPosition == before + 1 && r.firstPosition == before + 1, "the change comes before the bundle's events")
        let versions = try device.schemaVersions()
        #expect(versions.map(\.type) == ["SchemaDefined", "SchemaChanged"])
        #expect(versions[1].cause == "import:log-hub" && versions[1].actor == "op")
        #expect(versions[1].schema.layer(id: 0)?.field("Notes") != nil)
        #expect(device.schema.layer(id: 0)?.field("Notes") != nil, "the handle has the new schema in force")
        #expect(try device.attributes(tree)["Notes"] == .string("leaning"))
        #expect(try device.attributes(tree)["SiteWidth"]?.doubleValue == 7)
        // The field joined the device's pop-ups: its crew can edit it.
        try MergeDevices.set(device, tree, [("Notes", #""staked""#)], at: 9, actor: "dana", session: "d-1")
        #expect(try device.attributes(tree)["Notes"] == .string("staked"))

        // The same bundle again: nothing is imported, no second schema change.
        let again = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev").report
        #expect(again.imported == 0 && again.schemaChanges.isEmpty && again.schemaPosition == nil)
        #expect(try device.schemaVersions().count == 2)
        try expectSound(device)

        // The union goes on: the device's bundle brings the field to a third log (cause import:log-device), and the
        // hub takes the device's value without a change of its own.
        _ = try device.exportBundle(to: d.file("device.bundle"))
        let third = try MergeDevices.device("third", tp, seed: 13)
        let t = try third.importBundle(at: d.file("device.bundle"), actor: "op", device: "dev").report
        #expect(t.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        #expect(try third.schemaVersions().last?.cause == "import:log-device")
        #expect(try third.attributes(tree)["Notes"] == .string("staked"))
        let back = try hub.importBundle(at: d.file("device.bundle"), actor: "op", device: "hub").report
        #expect(back.schemaChanges.isEmpty && back.imported > 0)
        #expect(try hub.schemaVersions().count == 2)
        #expect(try hub.attributes(tree)["Notes"] == .string("staked"))
        for log in [hub, third] { try expectSound(log) }
    }

    @Test func aFieldWhoseTypeDiffersIsRefusedByNameWithNothingWritten() throws {
        let d = TempDir(), hp = TempPath(), dp = TempPath()
        let hub = try MergeDevices.device("hub", hp, seed: 11)
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        _ = try apply(hub, s)
        try MergeDevices.set(hub, tree, [("Notes", #""leaning""#)], at: 5, actor: "hana", session: "h-1")
        _ = try hub.exportBundle(to: d.file("hub.bundle"))
        // The device added a Notes of its own, an integer.
        let device = try MergeDevices.device("device", dp, seed: 12)
        var mine = try ServiceEdits.trees()
        mine.fields("Trees") { fs in
            fs.append(.object(["name": "Notes", "type": "esriFieldTypeInteger", "alias": "Notes", "nullable": true, "editable": true]))
        }
        _ = try apply(device, mine)
        let count = try device.eventCount()
        expectBundleError(.invalidInput, "field Trees.Notes is esriFieldTypeString in the bundle and esriFieldTypeInteger in this log") {
            _ = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev")
        }
        #expect(try device.eventCount() == count)
        #expect(try device.schemaVersions().count == 2)
        #expect(try device.verify().ok)
    }

    @Test func aFieldRemovedOnOneSideIsThatSidesDecision() throws {
        let d = TempDir(), hp = TempPath(), dp = TempPath()
        let hub = try MergeDevices.device("hub", hp, seed: 11)
        let device = try MergeDevices.device("device", dp, seed: 12)
        // The device removes PlantedBy; the hub sets it (and SiteWidth), then sets Wires and removes Wires.
        var noPlantedBy = try ServiceEdits.trees()
        noPlantedBy.remove("Trees", "PlantedBy")
        _ = try apply(device, noPlantedBy)
        try MergeDevices.set(hub, tree, [("PlantedBy", #""Friends of Trees""#), ("SiteWidth", "9"), ("Wires", "2")], at: 5, actor: "hana", session: "h-1")
        var noWires = try ServiceEdits.trees()
        noWires.remove("Trees", "Wires")
        _ = try apply(hub, noWires)
        try MergeDevices.set(hub, tree, [("SiteWidth", "11")], at: 6, actor: "hana", session: "h-2")
        _ = try hub.exportBundle(to: d.file("hub.bundle"))

        let r = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev").report
        // PlantedBy is not adopted again (the device removed it); Wires stays the device's (the hub's removal is the hub's).
        #expect(r.schemaChanges.isEmpty && r.schemaPosition == nil)
        #expect(r.removedFields == ["Trees.PlantedBy"])
        #expect(r.unprojectedValues > 0)
        #expect(r.conflicts.allSatisfy { $0.field != "PlantedBy" }, "a field this log lacks is never a conflict")
        let attrs = try device.attributes(tree)
        #expect(attrs["PlantedBy"] == nil)
        #expect(attrs["SiteWidth"]?.doubleValue == 11)
        #expect(attrs["Wires"]?.doubleValue == 2, "the hub's value from before its removal applies here: \(attrs)")
        #expect(device.schema.layer(id: 0)?.field("Wires") != nil && device.schema.layer(id: 0)?.field("PlantedBy") == nil)
        // The value stays in the imported event: history shows it.
        #expect(try device.history(globalId: tree).entries.contains { $0.field == "PlantedBy" && $0.new == .string("Friends of Trees") })
        let again = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev").report
        #expect(again.imported == 0 && again.schemaChanges.isEmpty)
        try expectSound(device)

        // The other way: the hub keeps Wires removed and PlantedBy; the device's events set neither.
        _ = try device.exportBundle(to: d.file("device.bundle"))
        let back = try hub.importBundle(at: d.file("device.bundle"), actor: "op", device: "hub").report
        #expect(back.schemaChanges.isEmpty && back.removedFields == ["Trees.Wires"])
        #expect(try hub.attributes(tree)["PlantedBy"] == .string("Friends of Trees"))
        #expect(try hub.attributes(tree)["Wires"] == nil)
        try expectSound(hub)
    }

    @Test func aNewTableWithItsRelationshipArrivesThroughABundle() throws {
        let d = TempDir(), hp = TempPath(), dp = TempPath()
        let hub = try MergeDevices.device("hub", hp, seed: 11)
        var s = try ServiceEdits.trees()
        s.addStewardshipTable()
        _ = try apply(hub, s)
        try hub.run(#"{"op":"create","layer":"Stewardship","globalId":"\#(newGID(7))","parent":{"relationship":"Tree_Stewardship","globalId":"\#(tree)"},"attributes":{"Steward":"Friends of Trees"}}"#,
                    #"{"op":"finish"}"#)
        _ = try hub.exportBundle(to: d.file("hub.bundle"))
        let device = try MergeDevices.device("device", dp, seed: 12)
        let r = try device.importBundle(at: d.file("hub.bundle"), actor: "op", device: "dev").report
        let changes = r.schemaChanges.map(\.text)
        #expect(changes.contains("layer-added Stewardship (4): table with 4 fields"), "\(changes)")
        #expect(changes.contains("relationship-added Trees (0): Tree_Stewardship (2) to layer 4"), "\(changes)")
        #expect(try device.schemaVersions().last?.cause == "import:log-hub")
        #expect(try device.attributes(newGID(7))["TreeGlobalID"] == .string(tree))
        // The device relates a record of its own through the adopted relationship.
        try device.run(#"{"op":"create","layer":"Stewardship","globalId":"\#(newGID(8))","parent":{"relationship":"Tree_Stewardship","globalId":"\#(tree)"},"attributes":{"Steward":"Neighbours"}}"#,
                       #"{"op":"finish"}"#)
        #expect(try device.attributes(newGID(8))["TreeGlobalID"] == .string(tree))
        try expectSound(device)
        _ = try device.exportBundle(to: d.file("device.bundle"))
        #expect(try hub.importBundle(at: d.file("device.bundle"), actor: "op", device: "hub").report.schemaChanges.isEmpty)
        #expect(try hub.attributes(newGID(8))["Steward"] == .string("Neighbours"))
        try expectSound(hub)
    }

    @Test func aBundleEndingBeforeTheChangeCarriesTheSchemaOfItsEnd() throws {
        let d = TempDir(), hp = TempPath(), dp = TempPath()
        let hub = try MergeDevices.device("hub", hp, seed: 11)
        let end = try hub.lastPosition()
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        _ = try apply(hub, s)
        _ = try hub.exportBundle(to: d.file("early.bundle"), until: .position(end))
        _ = try hub.exportBundle(to: d.file("late.bundle"), since: .position(end))
        let device = try MergeDevices.device("device", dp, seed: 12)
        #expect(try device.importBundle(at: d.file("early.bundle"), actor: "op", device: "dev").report.schemaChanges.isEmpty)
        // A bundle of the change alone (a --since window) brings it too.
        let late = try device.importBundle(at: d.file("late.bundle"), actor: "op", device: "dev").report
        #expect(late.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        try expectSound(device)
    }
}
