import EditLog
import Foundation
import Testing

/// The app-facing API: one call per pop-up action, each its own transaction.
@Suite struct EditorAPITests {
    @Test func aPopupSessionRecordsEachStepAndCommitsAtFinish() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let editor = Editor(log: log, actor: "maria", device: "ipad-07", clientClock: StepClock(start: 1_778_000_000_000, step: 60_000))
        let species = try Fixture.globalIds("Species")[3]
        let session = try editor.create(layer: "Trees", globalId: newGID(900), geometry: ["x": -122.63, "y": 45.52, "spatialReference": ["wkid": 4326]])
        try session.updateValue(42.5, field: "DBH")
        let before = try log.eventCount()
        #expect(throws: EditLogError.self) { try session.updateValue(500, field: "DBH") }
        #expect(try log.eventCount() == before, "an invalid value records nothing")
        try session.relate(relationship: "Species_Trees", to: species)
        try session.addAttachment(id: newGID(901), name: "trunk.jpg", contentType: "image/jpeg", data: [1, 2, 3], preferredSize: "large")
        #expect(throws: EditLogError.self) { try log.show(globalId: newGID(900)) }  // nothing applied before finish
        let committed = try session.finishEditing()
        #expect(committed.map(\.type).first == "SessionCommitted")
        #expect(committed.contains { $0.cause == "rule:tree-neighborhood" })
        let f = try log.show(globalId: newGID(900))
        #expect(f["attributes"]?["DBH"] == .double(42.5) && f["attributes"]?["SpeciesGlobalID"] == .string(species))
        #expect(f["attachments"]?.arrayValue?.first?["name"] == "trunk.jpg")
        var times: [String] = []
        try log.events(LogFilter(session: session.id)) { times.append($0.clientTime ?? "") }
        #expect(times.first == "2026-05-05T16:54:20.000Z" && times == times.sorted())
        // A second session cancelled leaves the feature as it was.
        let s2 = try editor.edit(layer: "Trees", globalId: newGID(900))
        try s2.updateValue("Dead", field: "Condition")
        try s2.cancelEditing()
        #expect(try log.show(globalId: newGID(900))["attributes"]?["Condition"] == "Good")
        try editor.delete(layer: "Trees", globalId: newGID(900))
        #expect(try log.show(globalId: newGID(900))["deleted"] == true)
    }
}
