import EditLog
import EditLogProjections
import Foundation
import GRDB
import Testing

/// A log whose service changes under it: each change is a `SchemaChanged` event, the projection tables follow it in its
/// transaction, edits are validated against the schema in force, and replay shows each moment with its own schema.
@Suite struct SchemaChangeTests {
    let tree = try! Fixture.globalIds("Trees")[0]

    func edit(_ log: EditLog, _ field: String, _ value: String, actor: String = "ivy") throws -> [RecordedEvent] {
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"\#(field)","value":\#(value)}"#,
                    #"{"op":"finish"}"#, actor: actor)
    }

    func apply(_ log: EditLog, _ edits: ServiceEdits) throws -> SchemaUpdate {
        try log.changeSchema(service: edits.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "test")
    }

    /// The columns of a table of a GeoPackage or SQLite file.
    func columns(_ path: String, _ table: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in try db.columns(in: table).map(\.name) }
    }

    /// The Trees columns of a GeoPackage replayed as of `position`.
    func replayedTreesColumns(_ log: EditLog, at position: Int64, _ tmp: TempPath) throws -> [String] {
        let out = tmp.path + "-\(position).gpkg"
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try log.replay(asOf: .position(position), to: out)
        return try columns(out, "Trees")
    }

    @Test func anAddedFieldGetsItsColumnAndTakesValuesOnlyFromItsChange() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let refused = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Notes","value":"early"}"#, #"{"op":"finish"}"#)
        #expect(refused.message.contains("Notes"), "\(refused.message)")
        let before = try log.lastPosition()
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        let update = try apply(log, s)
        #expect(update.changes.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        #expect(update.position == before + 1)
        #expect(try apply(log, s).position == nil, "the same definitions again change nothing")
        _ = try edit(log, "Notes", #""leaning""#)
        #expect(try log.attributes(tree)["Notes"] == .string("leaning"))
        // A second handle (another process) reads the new schema and the reshaped table.
        let other = try EditLog.open(at: tmp.path, readonly: true)
        #expect(try other.attributes(tree)["Notes"] == .string("leaning"))
        other.close()
        // A rebuild from the events gives the same projection, byte for byte.
        let digest = try log.projectionDigest()
        try log.rebuild()
        #expect(try log.projectionDigest() == digest)
        // Replay: before the change the GeoPackage has no Notes column; after it, it has.
        #expect(!(try replayedTreesColumns(log, at: before, tmp)).contains("Notes"))
        #expect(try replayedTreesColumns(log, at: try log.lastPosition(), tmp).contains("Notes"))
        // History shows the value at its position; the versions list both schemas.
        #expect(try log.history(globalId: tree).entries.contains { $0.field == "Notes" && $0.new == .string("leaning") })
        let versions = try log.schemaVersions()
        #expect(versions.map(\.type) == ["SchemaDefined", "SchemaChanged"])
        #expect(versions[1].cause == Cause.schemaApply && versions[1].actor == "admin")
        #expect(try log.schemaVersion(atOrBefore: before).schema.layer(id: 0)?.field("Notes") == nil)
    }

    @Test func aRemovedFieldKeepsItsHistoryAndTakesNoMoreValues() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        _ = try edit(log, "PlantedBy", #""Friends of Trees""#)
        let edited = try log.lastPosition()
        var s = try ServiceEdits.trees()
        s.remove("Trees", "PlantedBy")
        #expect(try apply(log, s).changes.map(\.text) == ["field-removed Trees.PlantedBy"])
        #expect(try log.attributes(tree)["PlantedBy"] == nil)
        let refused = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"PlantedBy","value":"x"}"#, #"{"op":"finish"}"#)
        #expect(refused.message.contains("PlantedBy"), "\(refused.message)")
        #expect(try log.history(globalId: tree).entries.contains { $0.field == "PlantedBy" && $0.new == .string("Friends of Trees") })
        #expect(try replayedTreesColumns(log, at: edited, tmp).contains("PlantedBy"))
        #expect(!(try replayedTreesColumns(log, at: try log.lastPosition(), tmp)).contains("PlantedBy"))
        let digest = try log.projectionDigest()
        try log.rebuild()
        #expect(try log.projectionDigest() == digest)
        #expect(try log.verify().problems.isEmpty)
    }

    /// A rebuild whose events are read on the connection it writes (a copy of the events in one database): the reshape
    /// at the change cannot drop a table while the events' statement is stepped, so the read stops before it.
    @Test func aRebuildReadingItsOwnConnectionPassesAChange() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        s.remove("Trees", "PlantedBy")
        _ = try apply(log, s)
        _ = try edit(log, "Notes", #""after""#)
        let digest = try log.projectionDigest()
        log.close()
        let memory = try DatabaseQueue()
        try memory.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [tmp.path])
            try db.execute(sql: "CREATE TABLE events AS SELECT * FROM src.events")
            try db.execute(sql: "CREATE TABLE log_meta AS SELECT * FROM src.log_meta")
            try db.execute(sql: "DETACH DATABASE src")
        }
        let rebuilt = try memory.write { db in
            try Projections.rebuild(db)
            return try Projections.digest(db).digest
        }
        #expect(rebuilt == digest)
    }

    @Test func aFieldTheLogsRulesWriteCannotBeRemoved() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let count = try log.eventCount()
        var s = try ServiceEdits.trees()
        s.remove("Trees", "DBH")
        let e = try #require(throws: EditLogError.self) { try apply(log, s) }
        #expect(e.message.contains("rules") && e.message.contains("DBH"), "\(e.message)")
        #expect(try log.eventCount() == count, "nothing written")
    }

    @Test func anExtendedDomainTakesTheNewCodeFromItsChangeOn() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let refused = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Condition","value":"Stump"}"#, #"{"op":"finish"}"#)
        #expect(refused.message.contains("coded value domain"), "\(refused.message)")
        var s = try ServiceEdits.trees()
        s.addCode("Trees", "Condition", "Stump")
        #expect(try apply(log, s).changes.map(\.text) == ["field-altered Trees.Condition: domain adds Stump (Stump)"])
        _ = try edit(log, "Condition", #""Stump""#)
        #expect(try log.attributes(tree)["Condition"] == .string("Stump"))
    }

    @Test func aWidenedStringTakesLongerValuesAndANarrowedOneBelowItsValuesIsRefused() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let long = String(repeating: "x", count: 12)
        _ = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Condition","value":"\#(long)"}"#, #"{"op":"finish"}"#)
        var s = try ServiceEdits.trees()
        s.field("Trees", "PlantedBy") { $0["length"] = .int(300) }
        #expect(try apply(log, s).changes.map(\.text) == ["field-altered Trees.PlantedBy: length 100 → 300"])
        _ = try edit(log, "PlantedBy", "\"\(String(repeating: "y", count: 150))\"")
        let count = try log.eventCount()
        s.field("Trees", "PlantedBy") { $0["length"] = .int(20) }
        let e = try #require(throws: EditLogError.self) { try apply(log, s) }
        #expect(e.message.contains("Trees.PlantedBy") && e.message.contains(tree), "\(e.message)")
        #expect(try log.eventCount() == count, "nothing written")
    }

    @Test func aTypeChangeIsRefusedNamingTheLayerFieldAndFeature() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let count = try log.eventCount()
        var s = try ServiceEdits.trees()
        s.field("Trees", "DBH") { $0["type"] = .string("esriFieldTypeString"); $0["length"] = .int(20); $0["domain"] = .null }
        let e = try #require(throws: EditLogError.self) { try apply(log, s) }
        #expect(e.kind == .invalidInput)
        #expect(e.message.contains("Trees.DBH") && e.message.contains("esriFieldTypeDouble → esriFieldTypeString") && e.message.contains("feature {"), "\(e.message)")
        #expect(try log.eventCount() == count, "nothing written")
    }

    @Test func aNewTableWithARelationshipTakesRelatedRecords() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        var s = try ServiceEdits.trees()
        s.addStewardshipTable()
        let changes = try apply(log, s).changes.map(\.text)
        #expect(changes.contains("layer-added Stewardship (4): table with 4 fields"), "\(changes)")
        #expect(changes.contains("relationship-added Trees (0): Tree_Stewardship (2) to layer 4"), "\(changes)")
        try log.run(#"{"op":"create","layer":"Stewardship","globalId":"\#(newGID(7))","parent":{"relationship":"Tree_Stewardship","globalId":"\#(tree)"},"attributes":{"Steward":"Friends of Trees"}}"#,
                    #"{"op":"finish"}"#)
        #expect(try log.attributes(newGID(7))["TreeGlobalID"] == .string(tree))
        let digest = try log.projectionDigest()
        try log.rebuild()
        #expect(try log.projectionDigest() == digest)
    }
}
