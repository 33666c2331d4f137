import EditLog
import Foundation
import GRDB
import Testing

/// Every reader honours the schema in force at the moment it shows (issue 56): replay, diff, blame, history, report
/// and log across a field added (Trees.Notes), a field removed (Trees.PlantedBy) and a domain extended (Trees.Condition).
@Suite struct ReadersAcrossSchemaChangeTests {
    let tree = try! Fixture.globalIds("Trees")[0]

    func edit(_ log: EditLog, _ field: String, _ value: String) throws -> Int64 {
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"\#(field)","value":\#(value)}"#,
                    #"{"op":"finish"}"#, actor: "ivy")
        return try log.eventCount()
    }

    func apply(_ log: EditLog, _ change: (inout ServiceEdits) -> Void) throws -> Int64 {
        var s = try ServiceEdits.trees()
        change(&s)
        let update = try log.changeSchema(service: s.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "console")
        return try #require(update.position)
    }

    func columns(_ path: String, _ table: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in try db.columns(in: table).map(\.name) }
    }

    func change(_ d: DiffResult) -> FeatureChange? { d.changes.first { $0.globalId == tree } }

    func blameFields(_ log: EditLog, asOf p: Int64?) throws -> [String: BlameEntry] {
        Dictionary(try log.blame(globalId: tree, asOf: p.map { .position($0) }).fields.map { ($0.field, $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func anAddedFieldIsReadWithTheSchemaOfEachMoment() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let before = try log.eventCount()
        let added = try apply(log) { $0.addString("Trees", "Notes") }
        let edited = try edit(log, "Notes", #""leaning""#)

        // diff across the addition: the new field's value is a change (null → value), the schema change listed once.
        let d = try log.diff(from: .position(before), to: .position(edited))
        let notes = try #require(change(d)?.fields.first { $0.field == "Notes" })
        #expect(notes.old == .null && notes.new == .string("leaning") && notes.actors == ["ivy"])
        #expect(d.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        #expect(d.schemaChanges.map(\.position) == [added] && d.schemaChanges[0].cause == Cause.schemaApply)
        #expect(d.json["schemaChanges"]?.arrayValue?.first?["change"]?["kind"] == .string("field-added"))
        // The change alone changes no feature; a window after it lists no schema change.
        let only = try log.diff(from: .position(before), to: .position(added))
        #expect(only.changes.isEmpty && only.schemaChanges.count == 1)
        #expect(try log.diff(from: .position(added), to: .position(edited)).schemaChanges.isEmpty)
        // Editor tracking still shows beside the value.
        #expect(change(d)?.fields.contains { $0.field == "EditDate" } == true && change(d)?.trackingOnly == false)

        // blame: no Notes before the change; from it on, null set by the change; then the edit's value.
        #expect(try blameFields(log, asOf: before)["Notes"] == nil)
        let atChange = try #require(try blameFields(log, asOf: added)["Notes"])
        #expect(atChange.value == .null && atChange.position == added && atChange.type == "SchemaChanged" && atChange.cause == Cause.schemaApply)
        #expect(try blameFields(log, asOf: nil)["Notes"]?.value == .string("leaning"))
        #expect(try log.blame(globalId: tree, asOf: .position(before)).layer.field("Notes") == nil)

        // history: the change at its position, before the value it made possible; not before it happened.
        let h = try log.history(globalId: tree).entries
        let schema = try #require(h.firstIndex { $0.field == "@schema" })
        #expect(h[schema].position == added && h[schema].new == .string("field-added Trees.Notes: esriFieldTypeString(200)"))
        #expect(h[schema].cause == Cause.schemaApply && h[schema].actor == "admin" && h[schema].schemaChange?.kind == .fieldAdded)
        #expect(h[schema].json["schemaChange"]?["field"] == .string("Notes") && h[schema].json["type"] == .string("SchemaChanged"))
        #expect(h.firstIndex { $0.field == "Notes" }.map { $0 > schema } == true)
        #expect(try log.history(globalId: tree, asOf: .position(before)).entries.allSatisfy { $0.field != "@schema" })

        // report: the change listed with its position, cause and actor; the one edited tree counted, nothing else.
        let r = try log.report(from: .position(before))
        #expect(r.schemaChanges.map(\.position) == [added] && r.schemaChanges[0].actor == "admin")
        #expect(r.edited == EditCounts(created: 0, updated: 1, deleted: 0))
        #expect(r.byCause["schema-apply"] == nil && r.byCause.values.reduce(0, +) == 1)
        #expect(r.html.contains("field-added Trees.Notes") && r.html.contains("id=\"schema-changes\""))

        // log: the event is listed like the others, its line the change.
        var listed: [RecordedEvent] = []
        try log.events(LogFilter(type: "SchemaChanged")) { listed.append($0) }
        #expect(listed.map(\.position) == [added])
        #expect(listed.first.flatMap(SchemaChange.summary(of:)) == "field-added Trees.Notes: esriFieldTypeString(200)")

        // replay: each moment with its columns; export (now) the current schema's.
        let early = tmp.path + "-early.gpkg", late = tmp.path + "-late.gpkg", now = tmp.path + "-now.gpkg"
        defer { for p in [early, late, now] { try? FileManager.default.removeItem(atPath: p) } }
        _ = try log.replay(asOf: .position(before), to: early)
        _ = try log.replay(asOf: .position(added), to: late)
        _ = try log.export(to: now)
        #expect(!(try columns(early, "Trees")).contains("Notes"))
        #expect(try columns(late, "Trees").contains("Notes") && columns(now, "Trees").contains("Notes"))
    }

    @Test func aRemovedFieldIsListedUntilItsRemovalAndItsValuesStayInHistory() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let start = try log.eventCount()
        let edited = try edit(log, "PlantedBy", #""Friends of Trees""#)
        let removed = try apply(log) { $0.remove("Trees", "PlantedBy") }
        let later = try edit(log, "Condition", #""Poor""#)

        // blame: before the removal the field is listed with its value; from the removal on it is not.
        #expect(try blameFields(log, asOf: start)["PlantedBy"] != nil)
        #expect(try blameFields(log, asOf: edited)["PlantedBy"]?.value == .string("Friends of Trees"))
        #expect(try blameFields(log, asOf: removed)["PlantedBy"] == nil)
        #expect(try blameFields(log, asOf: nil)["PlantedBy"] == nil)
        #expect(try log.blame(globalId: tree, asOf: .position(edited)).layer.field("PlantedBy") != nil)

        // diff: up to the removal the value is a change; across it, the field is a schema change and its values are not
        // (the state at TO has no such column).
        let upTo = try log.diff(from: .position(start), to: .position(edited))
        #expect(change(upTo)?.fields.first { $0.field == "PlantedBy" }?.new == .string("Friends of Trees"))
        let across = try log.diff(from: .position(start), to: .position(later))
        #expect(across.schemaChanges.map(\.text) == ["field-removed Trees.PlantedBy"] && across.schemaChanges[0].position == removed)
        #expect(across.changes.allSatisfy { c in !c.fields.contains { $0.field == "PlantedBy" } })
        #expect(change(across)?.fields.first { $0.field == "Condition" }?.new == .string("Poor"))
        // A window with only the edit and the removal: the tree's row differs in its editor tracking only.
        let edAndRemoved = try log.diff(from: .position(start), to: .position(removed))
        #expect(change(edAndRemoved)?.trackingOnly == true)

        // history: the old value stays, the removal at its position.
        let h = try log.history(globalId: tree).entries
        #expect(h.contains { $0.field == "PlantedBy" && $0.new == .string("Friends of Trees") && $0.position > start && $0.position <= edited })
        #expect(h.contains { $0.field == "@schema" && $0.position == removed && $0.new == .string("field-removed Trees.PlantedBy") })

        // report and log.
        let r = try log.report(from: .position(start))
        #expect(r.schemaChanges.map(\.text) == ["field-removed Trees.PlantedBy"])
        #expect(r.edited == EditCounts(created: 0, updated: 1, deleted: 0))
        var lines: [String] = []
        try log.events(LogFilter(type: "SchemaChanged")) { lines.append(SchemaChange.summary(of: $0) ?? "") }
        #expect(lines == ["field-removed Trees.PlantedBy"])

        // replay: before the removal the column and its value; after, no column.
        let early = tmp.path + "-early.gpkg", late = tmp.path + "-late.gpkg"
        defer { for p in [early, late] { try? FileManager.default.removeItem(atPath: p) } }
        _ = try log.replay(asOf: .position(edited), to: early)
        _ = try log.replay(asOf: .position(later), to: late)
        #expect(try columns(early, "Trees").contains("PlantedBy"))
        #expect(!(try columns(late, "Trees")).contains("PlantedBy"))
    }

    @Test func anExtendedDomainIsAnAlterationAndItsNewCodeAValue() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let start = try log.eventCount()
        let old = try log.attributes(tree)["Condition"]
        let extended = try apply(log) { $0.addCode("Trees", "Condition", "Stump") }
        let edited = try edit(log, "Condition", #""Stump""#)

        let d = try log.diff(from: .position(start), to: .position(edited))
        let c = try #require(change(d)?.fields.first { $0.field == "Condition" })
        #expect(c.old == old && c.new == .string("Stump"))
        #expect(d.schemaChanges.map(\.text) == ["field-altered Trees.Condition: domain adds Stump (Stump)"])

        #expect(try blameFields(log, asOf: extended)["Condition"]?.value == old)
        #expect(try blameFields(log, asOf: nil)["Condition"]?.value == .string("Stump"))
        let domain = try log.blame(globalId: tree, asOf: .position(start)).layer.field("Condition")?.domain
        if case .codedValue(_, let codes)? = domain { #expect(!codes.contains { $0.code == .string("Stump") }) } else { Issue.record("no coded domain") }

        let h = try log.history(globalId: tree).entries
        #expect(h.contains { $0.field == "@schema" && $0.position == extended && $0.schemaChange?.kind == .fieldAltered })
        #expect(h.contains { $0.field == "Condition" && $0.new == .string("Stump") && $0.position > extended })

        let r = try log.report(from: .position(start))
        #expect(r.schemaChanges.count == 1 && r.edited.updated == 1 && r.edited.created == 0 && r.edited.deleted == 0)
    }

    @Test func aLogWhoseSchemaNeverChangedShowsNoSchemaChange() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let start = try log.eventCount()
        let edited = try edit(log, "PlantedBy", #""Friends of Trees""#)
        #expect(try log.diff(from: .position(start), to: .position(edited)).schemaChanges.isEmpty)
        #expect(try log.history(globalId: tree).entries.allSatisfy { $0.field != "@schema" })
        #expect(try log.report().schemaChanges.isEmpty)
        #expect(try blameFields(log, asOf: nil)["PlantedBy"]?.value == .string("Friends of Trees"))
        var summaries: [String?] = []
        try log.events(LogFilter()) { summaries.append(SchemaChange.summary(of: $0)) }
        #expect(summaries.allSatisfy { $0 == nil })
    }
}
