import EditLog
import EditLogSync
import Foundation
import Testing

/// A service whose definitions change between two syncs of a device: sync records the change (a `SchemaChanged` of
/// cause `sync`) before it pulls, pulls the new field's values, makes recorded decisions where the service and the
/// log disagree, and stops with nothing written where a change would lose data.
@Suite struct SyncSchemaChangeTests {
    static let trees = 0

    /// A device synced once with a fake service of five trees; the run's report and the trees' GlobalIDs.
    func synced(_ tmp: TempPath) async throws -> (FakeFeatureServer, EditLog, [String]) {
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: true, minServerGen: 1000, serverGen: 1000)
        let data = try SyncServiceLimitsTests.fixtureTrees(5)
        fake.load(layer: Self.trees, data)
        let log = try SyncServiceLimitsTests.logFromDefinitions(fake, tmp, webmap: true)
        _ = try await SyncServiceLimitsTests.sync(log, fake)
        return (fake, log, data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) })
    }

    func set(_ log: EditLog, _ gid: String, _ field: String, _ value: String) throws {
        try SyncRig.set(log, gid, [(field, value)], at: "2026-06-02T10:00:00Z", actor: "ivy", session: "s-\(field)-\(gid.prefix(9))")
    }

    @Test func anAddedFieldsValuesArriveOnTheNextSync() async throws {
        let tmp = TempPath("added")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        fake.redefine { $0.addString("Trees", "Notes") }
        fake.calculate(layer: Self.trees, "Notes") { .string("note of \($0)") }
        let before = try log.lastPosition()
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
        #expect(r.schemaPosition == before + 1, "the change is recorded before anything is pulled")
        #expect(r.snapshot, "an added field makes the run read every feature")
        for g in gids { #expect(try log.attributes(g)["Notes"] == .string("note of \(g)")) }
        let version = try #require(try log.schemaVersions().last)
        #expect(version.cause == Cause.sync && version.source == FakeFeatureServer.url)
        let again = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(again.schemaChanges.isEmpty && again.eventsWritten == 0, "\(again.json.serialized())")
        // The device's own value of the new field reaches the service.
        try set(log, gids[2], "Notes", #""leaning east""#)
        let pushed = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(pushed.pushed.contains { $0.globalId == gids[2] && $0.fields.contains("Notes") }, "\(pushed.pushed)")
        #expect(fake.live(Self.trees).first { GlobalID.normalize($0.gid) == gids[2] }?.attributes["Notes"] == .string("leaning east"))
        #expect(try log.verify().ok)
        try SyncTests.validateEvents(log)
    }

    @Test func aRemovedFieldsLocalEditIsAConflictAndSyncGoesOn() async throws {
        let tmp = TempPath("removed")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        try set(log, gids[0], "PlantedBy", #""Friends of Trees""#)
        fake.redefine { $0.remove("Trees", "PlantedBy") }
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.text) == ["field-removed Trees.PlantedBy"])
        let c = try #require(r.conflicts.first { $0.kind == .fieldRemoved })
        #expect(c.globalId == gids[0] && c.field == "PlantedBy" && c.local.value == .string("Friends of Trees") && c.winner == .remote)
        let listed = try log.conflicts().filter { $0.conflict.kind == .fieldRemoved }
        #expect(listed.count == 1 && listed[0].position == r.schemaPosition)
        #expect(try log.attributes(gids[0])["PlantedBy"] == nil)
        #expect(try log.history(globalId: gids[0]).entries.contains { $0.field == "PlantedBy" && $0.new == .string("Friends of Trees") })
        // The device syncs again, and again: the removed field is no reason to stop.
        let again = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(again.schemaChanges.isEmpty)
        try SyncTests.validateEvents(log)
    }

    @Test func aLocalValueOutsideANarrowedDomainIsAConflictKeptAndPushed() async throws {
        let tmp = TempPath("narrowed")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        try set(log, gids[1], "Condition", #""Dead""#)
        fake.redefine { $0.dropCode("Trees", "Condition", "Dead") }
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.text) == ["field-altered Trees.Condition: domain drops Dead (Dead)"])
        let c = try #require(r.conflicts.first { $0.kind == .outsideDomain })
        #expect(c.globalId == gids[1] && c.local.value == .string("Dead") && c.winner == .local)
        #expect(try log.attributes(gids[1])["Condition"] == .string("Dead"))
        #expect(fake.live(Self.trees).first { GlobalID.normalize($0.gid) == gids[1] }?.attributes["Condition"] == .string("Dead"))
        // From the change on, the code is refused here.
        let refused = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(gids[2])"}"#, #"{"op":"set","field":"Condition","value":"Dead"}"#, #"{"op":"finish"}"#)
        #expect(refused.message.contains("coded value domain"), "\(refused.message)")
    }

    @Test func anExtendedDomainsNewCodeArrivesAndCanBeRecorded() async throws {
        let tmp = TempPath("extended")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        let edited = try log.lastPosition()
        fake.redefine { $0.addCode("Trees", "Condition", "Stump") }
        fake.update(layer: Self.trees, globalId: gids[0], ["Condition": "Stump"])
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.text) == ["field-altered Trees.Condition: domain adds Stump (Stump)"])
        #expect(try log.attributes(gids[0])["Condition"] == .string("Stump"))
        try set(log, gids[1], "Condition", #""Stump""#)
        #expect(try log.attributes(gids[1])["Condition"] == .string("Stump"))
        // Before the change, the schema in force had no such code: what was validated then stays as it was.
        func codes(_ s: ServiceSchema) -> [JSONValue] {
            guard case .codedValue(_, let values)? = s.layer(id: 0)?.field("Condition")?.domain else { return [] }
            return values.map(\.code)
        }
        #expect(!codes(try log.schemaVersion(atOrBefore: edited).schema).contains("Stump"))
        #expect(codes(try log.schemaVersion(atOrBefore: try #require(r.schemaPosition)).schema).contains("Stump"))
        try SyncTests.validateEvents(log)
    }

    @Test func aWidenedStringIsFollowed() async throws {
        let tmp = TempPath("widened")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        fake.redefine { $0.field("Trees", "PlantedBy") { $0["length"] = .int(300) } }
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.text) == ["field-altered Trees.PlantedBy: length 100 → 300"])
        try set(log, gids[0], "PlantedBy", "\"\(String(repeating: "y", count: 150))\"")
        #expect(try log.attributes(gids[0])["PlantedBy"]?.stringValue?.count == 150)
    }

    @Test func aTypeChangeStopsSyncBeforeItPullsAndWritesNothing() async throws {
        let tmp = TempPath("retyped")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        fake.redefine { $0.field("Trees", "DBH") { $0["type"] = .string("esriFieldTypeString"); $0["length"] = .int(20); $0["domain"] = .null } }
        fake.update(layer: Self.trees, globalId: gids[0], ["DBH": "thick"])
        let count = try log.eventCount()
        let e = try await #require(throws: EditLogError.self) { try await SyncServiceLimitsTests.sync(log, fake) }
        #expect(e.message.contains("Trees.DBH") && e.message.contains("stopped before pulling") && e.message.contains("feature {"), "\(e.message)")
        #expect(try log.eventCount() == count, "nothing written")
    }

    @Test func aNewTableWithARelationshipArrivesWithItsRecords() async throws {
        let tmp = TempPath("table")
        let (fake, log, gids) = try await synced(tmp)
        defer { log.close() }
        fake.redefine { $0.addStewardshipTable() }
        fake.load(layer: 4, [.object(["attributes": .object(["GlobalID": .string(newGID(41)), "TreeGlobalID": .string(gids[0]), "Steward": "Friends of Trees"])])])
        let r = try await SyncServiceLimitsTests.sync(log, fake)
        #expect(r.schemaChanges.map(\.kind).contains(.layerAdded))
        #expect(log.schema.layer(id: 4)?.name == "Stewardship")
        #expect(try log.attributes(newGID(41))["TreeGlobalID"] == .string(gids[0]))
        try SyncTests.validateEvents(log)
    }
}
