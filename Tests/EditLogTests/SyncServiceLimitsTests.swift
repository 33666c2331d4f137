import EditLog
import EditLogSync
import Foundation
import Testing

/// `editlog sync` against a service as ArcGIS runs them: change tracking enabled after the data was loaded
/// (`minServerGen` above zero) and queries that answer a few features at a time (`maxRecordCount`,
/// `exceededTransferLimit`). The service is `FakeFeatureServer`, in process.
@Suite struct SyncServiceLimitsTests {
    static let trees = 0

    /// The first `n` Trees of the fixtures, as the service's features.
    static func fixtureTrees(_ n: Int) throws -> [JSONValue] {
        Array(try Fixture.json("baseline/Trees.json")["features"]?.arrayValue?.prefix(n) ?? [])
    }

    static func client(_ fake: FakeFeatureServer) throws -> FeatureServiceClient {
        try FeatureServiceClient(url: FakeFeatureServer.url, token: nil, transport: fake)
    }

    static func sync(_ log: EditLog, _ fake: FakeFeatureServer, policy: MergePolicy = .lastInWins) async throws -> SyncReport {
        try await SyncEngine(log: log, client: try client(fake), options: SyncOptions(policy: policy, actor: "op", device: "test")).run()
    }

    /// A log made from the service's own `/layers` (as `editlog init DB --service layers.json`), no data.
    static func logFromDefinitions(_ fake: FakeFeatureServer, _ tmp: TempPath, webmap: Bool = false, baseline: [BaselineSet] = []) throws -> EditLog {
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        return try EditLog.create(at: tmp.path, service: [("layers", fake.layersJSON)], webmap: webmap ? try Fixture.json("webmap.json") : nil,
                                  rules: nil, baseline: baseline, clock: clock, ids: UUIDv7Generator(clock: clock, seed: 5), logId: "log-device")
    }

    static func liveTrees(_ log: EditLog) throws -> [String: [String: JSONValue]] {
        var out: [String: [String: JSONValue]] = [:]
        for f in try log.allFeatures(layer: trees) where !f.deleted { out[f.globalId] = f.attributes }
        return out
    }

    // MARK: 1. A first sync reads what the service held before its change tracking began

    @Test(arguments: [true, false])
    func aFirstSyncTakesASnapshotWhenTrackingBeganAfterTheData(pagination: Bool) async throws {
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: pagination, minServerGen: 1000, serverGen: 1000)
        let data = try Self.fixtureTrees(5)
        fake.load(layer: Self.trees, data)
        let gids = data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
        // Edits since tracking began: extractChanges from 0 answers only these.
        fake.update(layer: Self.trees, globalId: gids[1], ["SiteType": "Park"])
        fake.update(layer: Self.trees, globalId: gids[3], ["PlantedBy": "Volunteer"])
        let tmp = TempPath("first-sync")
        let log = try Self.logFromDefinitions(fake, tmp)
        defer { log.close() }
        let r = try await Self.sync(log, fake)
        #expect(r.snapshot)
        let here = try Self.liveTrees(log)
        #expect(Set(here.keys) == Set(gids), "the log holds \(here.count) of the service's 5 trees")
        #expect(here[gids[1]]?["SiteType"] == "Park" && here[gids[3]]?["PlantedBy"] == "Volunteer")
        // The snapshot recorded the generation: the next run reads changes only, and finds none.
        let again = try await Self.sync(log, fake)
        #expect(!again.snapshot && again.eventsWritten == 0, "\(again.json.serialized())")
        // Later changes come by extractChanges from there.
        fake.update(layer: Self.trees, globalId: gids[0], ["SiteType": "Median"])
        let third = try await Self.sync(log, fake)
        #expect(!third.snapshot && third.pulled.map(\.globalId) == [gids[0]], "\(third.pulled)")
        #expect(try log.attributes(gids[0])["SiteType"] == "Median")
        #expect(try log.verify().ok)
        try SyncTests.validateEvents(log)
    }

    @Test func aSyncOlderThanTheServicesMinServerGenTakesASnapshotAndSeesTheGapsDeletes() async throws {
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: true, minServerGen: 1000, serverGen: 1000)
        let data = try Self.fixtureTrees(5)
        fake.load(layer: Self.trees, data)
        let gids = data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
        let tmp = TempPath("gap")
        let log = try Self.logFromDefinitions(fake, tmp)
        defer { log.close() }
        _ = try await Self.sync(log, fake)
        #expect(try Self.liveTrees(log).count == 5)
        // Change tracking is disabled and enabled again: what happened meanwhile is not in extractChanges.
        fake.update(layer: Self.trees, globalId: gids[2], ["SiteType": "Park"])
        fake.delete(layer: Self.trees, globalId: gids[4])
        fake.minServerGen = fake.serverGen + 1
        let r = try await Self.sync(log, fake)
        #expect(r.snapshot)
        let here = try Self.liveTrees(log)
        #expect(here[gids[2]]?["SiteType"] == "Park")
        #expect(here[gids[4]] == nil, "the gap's delete is pulled")
        #expect(try log.snapshot(layer: Self.trees, globalId: gids[4])?.deleted == true)
        #expect(Set(here.keys) == Set(gids.prefix(4)))
    }

    @Test func aFirstSyncSeesWhatTheServiceDeletedBeforeItEvenWhenTrackingBeganAtZero() async throws {
        // The service tracked changes from the start, and deleted a tree the device's baseline holds before the
        // device ever synced: extractChanges names that delete by an ObjectID the device has never seen.
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: true, minServerGen: 0, serverGen: 1)
        let data = try Self.fixtureTrees(3)
        fake.load(layer: Self.trees, data, gen: 1)
        let gids = data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
        fake.delete(layer: Self.trees, globalId: gids[2])
        let tmp = TempPath("deleted-before")
        let log = try Self.logFromDefinitions(fake, tmp, webmap: true, baseline: [BaselineSet(name: "Trees.json", layer: "Trees", json: ["features": .array(data)])])
        defer { log.close() }
        let r = try await Self.sync(log, fake)
        #expect(r.snapshot)
        #expect(r.pulled.contains { $0.globalId == gids[2] && $0.kind == "delete" }, "\(r.pulled)")
        #expect(try log.snapshot(layer: Self.trees, globalId: gids[2])?.deleted == true)
        // Nothing goes back: the service still holds 2 live trees (no add of the deleted one).
        #expect(r.pushed.isEmpty, "\(r.pushed)")
        #expect(fake.live(Self.trees).count == 2)
    }

    /// After a first sync's snapshot, the push reads on the service only the features changed here since the common
    /// base (the baseline): the snapshot has just read the rest. Two devices with the service's 6 trees as their
    /// baseline, one with an edit: its sync asks one more query (its tree), however many trees the baseline holds.
    @Test func aFirstSyncPushReadsOnlyWhatChangedHereSinceTheBaseline() async throws {
        var queries: [Int] = []
        for edited in [false, true] {
            let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: true, minServerGen: 0, serverGen: 1)
            let data = try Self.fixtureTrees(6)
            fake.load(layer: Self.trees, data, gen: 1)
            let gids = data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
            let tmp = TempPath("first-push")
            let log = try Self.logFromDefinitions(fake, tmp, webmap: true, baseline: [BaselineSet(name: "Trees.json", layer: "Trees", json: ["features": .array(data)])])
            defer { log.close() }
            if edited { try SyncRig.set(log, gids[0], [("SiteType", "\"Median\"")], at: "2026-06-01T10:00:00Z", actor: "dana", session: "e-1") }
            let r = try await Self.sync(log, fake)
            #expect(r.snapshot)
            #expect(r.pushed.map(\.globalId) == (edited ? [gids[0]] : []), "\(r.pushed)")
            #expect(fake.live(Self.trees).count == 6)
            queries.append(fake.count("query"))
            // The next run, nothing new on either side: no feature is read again (the base was reconciled once).
            let again = try await Self.sync(log, fake)
            #expect(!again.snapshot && again.pushed.isEmpty && again.eventsWritten == 0, "\(again.json.serialized())")
            #expect(fake.count("query") == queries.last!, "the next run queried \(fake.count("query") - queries.last!) times")
        }
        #expect(queries[1] == queries[0] + 1, "queries without and with the edit: \(queries)")
    }

    // MARK: 2. The push reads the service's state whole

    @Test(arguments: [true, false])
    func thePushReadsEveryPageOfTheServicesState(pagination: Bool) async throws {
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: pagination, minServerGen: 0, serverGen: 0)
        let data = try Self.fixtureTrees(5)
        fake.load(layer: Self.trees, data)
        let gids = data.compactMap { $0["attributes"]?["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
        let tmp = TempPath("push-pages")
        let log = try Self.logFromDefinitions(fake, tmp, webmap: true, baseline: [BaselineSet(name: "Trees.json", layer: "Trees", json: ["features": .array(data)])])
        defer { log.close() }
        for (i, g) in gids.enumerated() {
            try SyncRig.set(log, g, [("PlantedBy", "\"crew \(i)\"")], at: "2026-06-0\(i + 1)T10:00:00Z", actor: "dana", session: "d-\(i)")
        }
        let r = try await Self.sync(log, fake)
        #expect(r.pushed.map(\.kind) == Array(repeating: "update", count: 5), "\(r.pushed)")
        let rows = fake.live(Self.trees)
        #expect(rows.count == 5, "the service holds \(rows.count) rows for 5 trees (duplicate GlobalIDs)")
        for (i, g) in gids.enumerated() {
            #expect(rows.filter { GlobalID.normalize($0.gid) == g }.map { $0.attributes["PlantedBy"] } == [.string("crew \(i)")])
        }
    }

    @Test func aQueryThatClaimsMoreButSendsNothingIsRefusedNotCutShort() async throws {
        struct Liar: ServiceTransport {
            func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse { try await postForm(url, form: query) }
            func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse {
                TransportResponse(status: 200, body: Array(#"{"features":[],"exceededTransferLimit":true}"#.utf8), contentType: "application/json")
            }
        }
        let client = try FeatureServiceClient(url: FakeFeatureServer.url, token: nil, transport: Liar())
        await #expect(throws: EditLogError.self) {
            try await client.queryAll(layer: 0, where: "1=1", returnGeometry: false, limits: LayerReadLimits(maxRecordCount: 2, supportsPagination: true)) { _ throws(EditLogError) in }
        }
    }

    // MARK: init --service URL

    @Test func aLogMadeFromALiveServiceHoldsEveryFeatureAndItsFirstSyncFindsThemEqual() async throws {
        let fake = try FakeFeatureServer(maxRecordCount: 2, supportsPagination: false, minServerGen: 1000, serverGen: 1003)
        let data = try Self.fixtureTrees(5)
        fake.load(layer: Self.trees, data)
        let snap = try await ServiceSnapshot.read(try Self.client(fake))
        #expect(snap.features == 5 && snap.serverGen == 1003)
        let tmp = TempPath("init-live")
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        let log = try EditLog.create(at: tmp.path, service: [("layers", snap.layers)], webmap: nil, rules: nil, baseline: snap.sets,
                                     clock: clock, ids: UUIDv7Generator(clock: clock, seed: 5), logId: "log-live")
        defer { log.close() }
        #expect(try Self.liveTrees(log).count == 5)
        // The first sync's snapshot finds the same features: nothing pulled or pushed, the generation recorded.
        let r = try await Self.sync(log, fake)
        #expect(r.snapshot && r.pulled.isEmpty && r.pushed.isEmpty, "\(r.json.serialized())")
        #expect(fake.live(Self.trees).count == 5)
        let again = try await Self.sync(log, fake)
        #expect(!again.snapshot && again.eventsWritten == 0, "\(again.json.serialized())")
        try SyncTests.validateEvents(log)
    }
}
