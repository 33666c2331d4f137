import EditLog
import EditLogHub
import EditLogServer
import EditLogStore
import EditLogSync
import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Serve nodes of a hub on PostgreSQL (`HubNode`): replicas caught up from the store, writes decided on the replica
/// and appended to the store first, decided again when the hub moved on, restarts and lost caches.
@Suite(.serialized, .enabled(if: EngineUnderTest.postgresURL != nil, "no PostgreSQL test server: EDITLOG_TEST_POSTGRES is not set and PostgreSQL is not installed here (or its throwaway cluster did not start)"))
struct HubNodeTests {
    /// A hub store holding the SyncRig hub's log (Trees of Portland), copied as it is.
    static func withHub<T>(_ body: (PostgresEventStore) async throws -> T) async throws -> T {
        try await PostgresScratch.withDatabase { location in
            let th = TempPath("hub-source")
            let source = try SyncRig.hub(th)
            defer { source.close() }
            let events = try source.events()
            let blobs = try Set(events.flatMap(\.blobReferences)).sorted().map { try #require(try source.blob(sha256: $0)) }
            let store = try await PostgresEventStore.create(location, logId: source.logId, initial: events.map { EventAppend(recorded: $0) }, initialBlobs: blobs)
            defer { store.close() }
            return try await body(store)
        }
    }

    /// A node of `store` with its local copy in `dir` (ids of its own: nodes never make the same event id).
    static func node(_ store: PostgresEventStore, _ dir: TempPath, seed: UInt64) throws -> HubNode {
        let clock = StepClock(start: 1_780_000_900_000 + Int64(seed) * 1_000_000, step: 3)
        return try HubNode.open(store.location, cacheDirectory: dir.path, clock: clock, ids: UUIDv7Generator(clock: clock, seed: seed))
    }

    /// Serves `node` for the duration of `body`, which gets its FeatureServer URL.
    static func serve(_ node: HubNode, login: Login? = nil, _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        var options = ServerOptions(serviceName: "Trees")
        options.login = login
        options.tokens = [SyncRig.token: SyncRig.hubUser]
        options.port = 0
        options.writer = node
        options.serviceItemId = node.store.logId
        try await makeApplication(log: node.local, options: options, quiet: true).test(.live) { client in
            try await body("http://127.0.0.1:\(try #require(client.port))/arcgis/rest/services/Trees/FeatureServer")
        }
    }

    /// The store holds positions 1…head with no gap, no event twice, and its chain verifies.
    static func expectWholeStore(_ store: PostgresEventStore, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [RecordedEvent] {
        let head = try await store.verifyChain()
        let all = try await store.events(after: 0, limit: 1_000_000)
        #expect(all.map(\.position) == Array(1...head.position), sourceLocation: sourceLocation)
        #expect(Set(all.map(\.id)).count == all.count, sourceLocation: sourceLocation)
        return all
    }

    /// The issue's case: two nodes on one store; device A syncs through node 1, device B through node 2 then node 1,
    /// and A again through node 2. Both devices and both replicas end with the same data, each replica's
    /// projections equal a rebuild, and the store holds every edit once.
    @Test func twoNodesOneStoreAndDevicesSyncThroughEither() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            let n1 = Unchecked(try Self.node(store, d1, seed: 71)), n2 = Unchecked(try Self.node(store, d2, seed: 72))
            defer { n1.value.close(); n2.value.close() }
            let ta = TempPath("a"), tb = TempPath("b")
            let a = Unchecked(try SyncRig.device(ta, name: "a", seed: 31)), b = Unchecked(try SyncRig.device(tb, name: "b", seed: 32))
            defer { a.value.close(); b.value.close() }
            let tree = SyncRig.tree1, other = "{929D6377-1CFB-455F-82C4-2E488CBADAE5}"
            try SyncRig.set(a.value, other, [("SiteWidth", "7.5")], at: "2026-06-01T12:00:00Z", actor: "ann", session: "a-1")
            let added = try SyncRig.addTree(a.value, 500, actor: "ann", at: "2026-06-01T12:05:00Z")
            try SyncRig.set(b.value, tree, [("PlantedBy", #""Bob's crew""#)], at: "2026-06-01T12:10:00Z", actor: "bob", session: "b-1")
            try await Self.serve(n1.value) { url1 in
                try await Self.serve(n2.value) { url2 in
                    let ra = try await SyncRig.sync(a.value, url1)
                    #expect(!ra.pushed.isEmpty, "\(ra.pushed)")
                    // Node 2 never saw A's request: the root and extractChanges it answers B with catch up first.
                    let rb = try await SyncRig.sync(b.value, url2)
                    #expect(rb.pulled.contains { $0.globalId == added.tree }, "\(rb.pulled)")
                    let rb2 = try await SyncRig.sync(b.value, url1)
                    #expect(rb2.pushed.isEmpty && !rb2.snapshot, "\(rb2.pushed)")
                    // A comes back through the other node: the same service to it (the hub's serviceItemId), no snapshot.
                    let ra2 = try await SyncRig.sync(a.value, url2)
                    #expect(!ra2.snapshot && ra2.service == "item:\(store.logId)")
                    #expect(ra2.pulled.contains { $0.globalId == tree && $0.fields.contains("PlantedBy") }, "\(ra2.pulled)")
                }
            }
            try n1.value.catchUp()
            try n2.value.catchUp()
            let stateA = try SyncRig.userState(a.value)
            #expect(stateA[added.tree] != nil && stateA[added.inspection] != nil)
            #expect(try b.value.attributes(other)["SiteWidth"]?.doubleValue == 7.5)
            #expect(try a.value.attributes(tree)["PlantedBy"]?.stringValue == "Bob's crew")
            for (name, log) in [("B", b.value), ("node 1", n1.value.local), ("node 2", n2.value.local)] {
                let differences = SyncRig.differences(stateA, try SyncRig.userState(log))
                #expect(differences.isEmpty, "\(name): \(differences.prefix(3))")
            }
            let all = try await Self.expectWholeStore(store)
            for n in [n1.value, n2.value] {
                #expect(try n.local.head() == StoreHead(position: all.last!.position, hash: all.last!.hash))
                #expect(try n.local.digestOfProjections() == n.local.digestOfRebuild())
                #expect(try n.local.events() == all)
            }
            // Every attachment A added reached the store with its bytes.
            for sha in Set(all.flatMap(\.blobReferences)) { #expect(try await store.blob(sha256: Hex.decode(sha)!) != nil, "\(sha)") }
        }
    }

    /// A write decided on a local copy the hub moved past (node 2 appended in between) appends nothing, and is decided
    /// again on the caught-up local copy: both edits are in the store once, in the order the hub took them.
    @Test func aWriteTheHubMovedPastIsDecidedAgain() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            let n1 = try Self.node(store, d1, seed: 73), n2 = try Self.node(store, d2, seed: 74)
            defer { n1.close(); n2.close() }
            let tree = SyncRig.tree1
            var attempts = 0
            try n1.write { log in
                attempts += 1
                if attempts == 1 {
                    // Another node appends after node 1 caught up, before it appends.
                    try n2.write { try SyncRig.set($0, tree, [("Address", #""from node 2""#)], at: "2026-06-01T12:00:00Z", actor: "bob", session: "n2-1") }
                }
                try SyncRig.set(log, tree, [("SiteWidth", "4.5")], at: "2026-06-01T12:01:00Z", actor: "ann", session: "n1-\(attempts)")
            }
            #expect(attempts == 2)
            let all = try await Self.expectWholeStore(store)
            let committed = all.filter { $0.type == EventType.sessionCommitted.rawValue }.map { $0.session }
            #expect(committed == ["n2-1", "n1-2"])
            try n2.catchUp()
            for n in [n1, n2] {
                #expect(try n.local.attributes(tree)["SiteWidth"]?.doubleValue == 4.5)
                #expect(try n.local.attributes(tree)["Address"]?.stringValue == "from node 2")
                #expect(try n.local.events() == all)
            }
            // A real conflict (a session that is not open) goes back to the caller once, not retried.
            attempts = 0
            #expect(throws: EditLogError.self) {
                try n1.write { log in
                    attempts += 1
                    try SyncRig.set(log, "{00000000-0000-0000-0000-00000000BEEF}", [("SiteWidth", "1")], at: "2026-06-01T12:02:00Z", actor: "ann", session: "x")
                }
            }
            #expect(attempts == 1)
            #expect(try await store.head().position == all.last!.position)
        }
    }

    /// A node closed while others append catches up from its last position when it opens again; a deleted cache is
    /// built again from the store; a local copy that is not the store's prefix (another hub's, damaged) is replaced.
    @Test func aRestartedNodeCatchesUpAndALostCacheIsRebuilt() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            var n1 = try Self.node(store, d1, seed: 75)
            let n2 = try Self.node(store, d2, seed: 76)
            defer { n2.close() }
            let path = n1.localPath
            n1.close()
            try n2.write { try SyncRig.set($0, SyncRig.tree1, [("SiteWidth", "3.5")], at: "2026-06-01T12:00:00Z", actor: "bob", session: "s-1") }
            let before = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
            n1 = try Self.node(store, d1, seed: 75)
            #expect(n1.localPath == path && before != nil)
            #expect(try n1.local.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 3.5)
            let head = try await store.head()
            #expect(try n1.local.head() == head)
            n1.close()
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            n1 = try Self.node(store, d1, seed: 75)
            #expect(try n1.local.head() == head)
            #expect(try n1.local.digestOfProjections() == n1.local.digestOfRebuild())
            n1.close()
            // Another log's file where the local copy should be: replaced, not trusted.
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let other = try Fixture.treesLog(at: path, seed: 5, logId: store.logId)
            try SyncRig.set(other, SyncRig.tree1, [("SiteWidth", "9")], at: "2026-06-01T12:00:00Z", actor: "eve", session: "e")
            other.close()
            n1 = try Self.node(store, d1, seed: 75)
            defer { n1.close() }
            #expect(try n1.local.head() == head)
            #expect(try n1.local.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 3.5)
        }
    }

    /// The subscription: a node that follows sees another node's append without being asked (NOTIFY, else the poll).
    /// Logging in works on a hub as on a log: nodes given one users file and one key file take each other's tokens,
    /// so a device that logged in through node 1 edits through node 2, as the user it logged in as.
    @Test func aTokenOneNodeIssuedIsGoodAtTheOther() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2"), keys = TempPath("keys")
            let n1 = Unchecked(try Self.node(store, d1, seed: 81)), n2 = Unchecked(try Self.node(store, d2, seed: 82))
            defer { n1.value.close(); n2.value.close(); for s in [".users", ".key"] { try? FileManager.default.removeItem(atPath: keys.path + s) } }
            var users = UsersFile()
            try users.set("hub_login", PasswordHash.make(password: "hub-login-pass", rounds: 1000))
            try users.write(to: keys.path + ".users")
            let login = try Login(usersPath: keys.path + ".users", signer: try TokenSigner.loadOrCreate(at: keys.path + ".key"))
            try await Self.serve(n1.value, login: login) { url1 in
                try await Self.serve(n2.value, login: login) { url2 in
                    let root1 = url1.components(separatedBy: "/rest/services/")[0]
                    let t = try await Self.post(root1 + "/tokens/generateToken", [("username", "hub_login"), ("password", "hub-login-pass"), ("f", "json")])
                    let token = try #require(t["token"]?.stringValue, "\(t.serialized())")
                    let e = try await Self.post(url2 + "/0/applyEdits", [("updates", #"[{"attributes":{"OBJECTID":1,"DBH":77}}]"#), ("f", "json"), ("token", token)])
                    #expect(e["updateResults"]?.at(0)?["success"] == true, "\(e.serialized())")
                }
            }
            try n1.value.catchUp()
            #expect(try n1.value.local.sessions(actor: "hub_login").count == 1)
            #expect(try n1.value.local.head() == (try await store.head()))
        }
    }

    /// Replicas on a hub: created through node 1, synchronized through node 2 (the upload appended to the store as
    /// the replica's sessions), listed by either; the store holds every event once and both replicas equal it.
    @Test func aReplicaCreatedAtOneNodeSynchronizesAtTheOther() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            let n1 = Unchecked(try Self.node(store, d1, seed: 83)), n2 = Unchecked(try Self.node(store, d2, seed: 84))
            defer { n1.value.close(); n2.value.close() }
            try await Self.serve(n1.value) { url1 in
                try await Self.serve(n2.value) { url2 in
                    let auth = [("f", "json"), ("token", SyncRig.token)]
                    let created = try await Self.post(url1 + "/createReplica", [("layers", "[0]"), ("syncModel", "perReplica"), ("replicaName", "hub")] + auth)
                    let id = try #require(created["replicaID"]?.stringValue, "\(created.serialized().prefix(300))")
                    let gen = try #require(created["replicaServerGen"]?.intValue)
                    let edits = #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(SyncRig.tree1)","SiteWidth":9.5}}]}}]"#
                    let synced = try await Self.post(url2 + "/synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("edits", edits),
                                                                                  ("syncDirection", "bidirectional")] + auth)
                    #expect(synced["replicaServerGen"]?.intValue ?? 0 > gen, "\(synced.serialized().prefix(300))")
                    let list = try await Self.post(url1 + "/replicas", auth)
                    #expect(list.arrayValue?.map { $0["replicaID"]?.stringValue } == [id], "\(list.serialized())")
                }
            }
            let all = try await Self.expectWholeStore(store)
            #expect(all.contains { $0.cause.hasPrefix("replica:") && $0.type == EventType.sessionCommitted.rawValue })
            for n in [n1.value, n2.value] {
                try n.catchUp()
                #expect(try n.local.events() == all)
                #expect(try n.local.attributes(SyncRig.tree1)["SiteWidth"]?.doubleValue == 9.5)
            }
        }
    }

    static func post(_ url: String, _ form: [(String, String)]) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: formEncode(form)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return try JSONParser.parse(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
    }

    /// A request to a node: its status, the headers this suite reads, and its body.
    static func send(_ url: String, _ form: [(String, String)]) async throws -> (status: Int, headers: [String: String], body: JSONValue) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: formEncode(form)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var headers: [String: String] = [:]
        for name in ["X-EditLog-Stale-Seconds", "Retry-After"] { headers[name] = response.headers.first(name: name) }
        return (Int(response.status.code), headers, try JSONParser.parse(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)))
    }

    /// Every answer of a node says how stale its local copy may be. Once the node stops (as when its store does not
    /// answer), reads are answered from the local copy, and writes and extractChanges get ArcGIS's 503 with
    /// Retry-After at once, nothing appended.
    @Test func aStoppedNodeAnswersReadsFromItsLocalCopyAndWritesWith503() async throws {
        try await Self.withHub { store in
            let d = TempPath("node-stop")
            let node = try Self.node(store, d, seed: 91)
            defer { node.close() }
            node.startFollowing()
            try await Self.serve(node) { url in
                let token = SyncRig.token
                let read = [("where", "1=1"), ("outFields", "OBJECTID"), ("f", "json"), ("token", token)]
                let live = try await Self.send(url + "/0/query", read)
                #expect(live.status == 200)
                let fresh = try #require(live.headers["X-EditLog-Stale-Seconds"].flatMap(Double.init))
                #expect(fresh >= 0 && fresh < 5)
                let head = try await store.head()
                node.stop()
                let stale = try await Self.send(url + "/0/query", read)
                #expect(stale.status == 200)
                #expect((stale.body["features"]?.arrayValue?.count ?? 0) > 0)
                #expect(stale.headers["X-EditLog-Stale-Seconds"] != nil)
                let started = Date()
                let edit = try await Self.send(url + "/0/applyEdits", [("updates", #"[{"attributes":{"OBJECTID":1,"DBH":77}}]"#), ("f", "json"), ("token", token)])
                #expect(edit.status == 503)
                #expect(edit.body["error"]?["code"]?.intValue == 503)
                #expect(edit.headers["Retry-After"] == "5")
                #expect(Date().timeIntervalSince(started) < 2)
                let changes = try await Self.send(url + "/extractChanges", [("layers", "[0]"), ("serverGens", "[0]"), ("returnIdsOnly", "true"), ("f", "json"), ("token", token)])
                #expect(changes.status == 503)
                #expect(try await store.head() == head)
            }
        }
    }

    @Test func aFollowingNodeCatchesUpByItself() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            let n1 = try Self.node(store, d1, seed: 77), n2 = try Self.node(store, d2, seed: 78)
            defer { n1.close(); n2.close() }
            n1.startFollowing(poll: 5)
            let start = try await store.head().position
            try n2.write { try SyncRig.set($0, SyncRig.tree1, [("SiteWidth", "6.5")], at: "2026-06-01T12:00:00Z", actor: "bob", session: "f-1") }
            let target = try await store.head()
            var seen = false
            for _ in 0..<200 where !seen {
                seen = try n1.local.head() == target
                if !seen { try await Task.sleep(for: .milliseconds(25)) }
            }
            #expect(seen)
            // The node measured its catch-up: from the store's notification of the other node's commit to its local copy's
            // commit (a write made before its notification connection was up is caught up without one: written again).
            for k in 2...6 where n1.lag.isEmpty {
                try n2.write { try SyncRig.set($0, SyncRig.tree1, [("SiteWidth", "\(k).5")], at: "2026-06-01T12:0\(k):00Z", actor: "bob", session: "f-\(k)") }
                let head = try await store.head()
                var tries = 0
                while try n1.local.head() != head, tries < 200 { tries += 1; try await Task.sleep(for: .milliseconds(25)) }
            }
            let lag = n1.lag
            #expect(!lag.isEmpty && lag.allSatisfy { $0 >= 0 && $0 < 5_000 }, "\(lag)")
            // And the head lock's time held by the appends (the serial section): one append per write, each held a while.
            let held = n2.serialSection
            #expect(held.appends >= 1 && held.events >= held.appends && held.heldMs > 0 && held.percentile(0.99) > 0, "\(held)")
            #expect(n1.figures["lagCommits"]?.intValue == Int64(lag.count))
            // The CPU split: the writer decided every event it appended; the follower followed them (and decided none).
            // (The follower counts a batch once its apply has returned, a moment after its commit made the head visible.)
            let wrote = n2.cpu
            for _ in 0..<200 where n1.cpu.followedEvents < wrote.decidedEvents { try await Task.sleep(for: .milliseconds(25)) }
            let followed = n1.cpu
            #expect(wrote.decidedEvents == Int(try await store.head().position - start) && wrote.decideNs > 0, "\(wrote)")
            #expect(followed.followedEvents >= wrote.decidedEvents && followed.followNs > 0 && followed.decidedEvents == 0, "\(followed)")
        }
    }
}

extension HubNodeTests {
    /// The commands on a `postgres://` store, through local copies in `--cache` directories: a device's bundle imported
    /// into the hub (twice: the second a no-op), a script recorded there, and log, history, conflicts, bundle export
    /// and verify reading it through another local copy.
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func theCommandsTakeAPostgresStore() async throws {
            try await PostgresScratch.withDatabase { location in
                let url = PostgresScratch.url(location.database)
                let f = Paths.trees
                let inputs = ["--service", f + "/service.json", "--webmap", f + "/webmap.json", "--rules", f + "/rules.json", "--data"]
                    + ["Species", "Neighborhoods", "Trees", "Inspections"].map { f + "/baseline/\($0).json" }
                var r = try CLI.run(["hub", "init", url] + inputs + ["--json"])
                #expect(r.status == 0, "\(r.stderr)")
                let baselineEnd = try JSONParser.parse(Array(r.stdout.utf8))["events"]?.intValue ?? 0
                let dir = TempPath("hub-cli")
                try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
                let device = dir.path + "/device.editlog", bundle = dir.path + "/device.tar.gz", c1 = dir.path + "/c1", c2 = dir.path + "/c2"
                r = try CLI.run(["init", device] + inputs)
                #expect(r.status == 0, "\(r.stderr)")
                r = try CLI.run(["record", device, f + "/scripts/01-new-plantings.ndjson"])
                #expect(r.status == 0, "\(r.stderr)")
                r = try CLI.run(["bundle", "export", device, "--out", bundle, "--since", String(baselineEnd)])
                #expect(r.status == 0, "\(r.stderr)")
                r = try CLI.run(["bundle", "import", url, bundle, "--cache", c1, "--json"])
                #expect(r.status == 0, "\(r.stderr)")
                let first = try JSONParser.parse(Array(r.stdout.utf8))
                r = try CLI.run(["bundle", "import", url, bundle, "--cache", c1, "--json"])
                let again = try JSONParser.parse(Array(r.stdout.utf8))
                #expect(r.status == 0 && again["imported"]?.intValue == 0 && (first["imported"]?.intValue ?? 0) > 0, "\(first.serialized()) \(again.serialized())")
                r = try CLI.run(["record", url, f + "/scripts/02-inspections.ndjson", "--cache", c1])
                #expect(r.status == 0, "\(r.stderr)")
                // Another local copy (another machine's cache) reads all of it.
                r = try CLI.run(["verify", url, "--json"])
                let verified = try JSONParser.parse(Array(r.stdout.utf8))
                #expect(r.status == 0 && verified["ok"]?.boolValue == true, "\(r.stdout) \(r.stderr)")
                r = try CLI.run(["log", url, "--cache", c2, "--json"])
                let lines = r.stdout.split(separator: "\n")
                #expect(r.status == 0 && Int64(lines.count) == verified["events"]?.intValue, "\(r.stderr) \(lines.count)")
                r = try CLI.run(["history", url, "{BB88854E-7F96-4D71-8182-70D2C3101E2E}", "--cache", c2, "--json"])
                #expect(r.status == 0 && r.stdout.contains("maria.lopez"), "\(r.stderr)")
                r = try CLI.run(["conflicts", "list", url, "--cache", c2, "--json"])
                #expect(r.status == 0, "\(r.stderr)")
                r = try CLI.run(["bundle", "export", url, "--cache", c2, "--out", dir.path + "/hub.tar.gz", "--json"])
                #expect(r.status == 0, "\(r.stderr)")
                r = try CLI.run(["bundle", "verify", dir.path + "/hub.tar.gz"])
                #expect(r.status == 0, "\(r.stderr)")
                // A store that is not there: a clear error, nothing made.
                r = try CLI.run(["log", PostgresScratch.url("postgres"), "--cache", dir.path + "/c3"])
                #expect(r.status == 68 && r.stderr.contains("hub init"), "\(r.stderr)")
            }
        }
    }

    /// A schema change recorded through one node (as `editlog schema postgres://… apply` does) reaches the store before
    /// it commits; the other node's copy adopts it when it catches up (its table reshaped, its schema the new one), and
    /// a device syncing through that node adopts it too and pulls the value set through the first.
    @Test func aSchemaChangeThroughOneNodeReachesTheOtherAndItsDevices() async throws {
        try await Self.withHub { store in
            let d1 = TempPath("node1"), d2 = TempPath("node2")
            let n1 = Unchecked(try Self.node(store, d1, seed: 81)), n2 = Unchecked(try Self.node(store, d2, seed: 82))
            defer { n1.value.close(); n2.value.close() }
            let td = TempPath("device")
            let device = Unchecked(try SyncRig.device(td, name: "device", seed: 33))
            defer { device.value.close() }
            try await Self.serve(n2.value) { url2 in
                _ = try await SyncRig.sync(device.value, url2)
                var edits = try ServiceEdits.trees()
                edits.addString("Trees", "Notes")
                let update = try n1.value.local.changeSchema(service: edits.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "node1")
                let position = try #require(update.position)
                try SyncRig.set(n1.value.local, SyncRig.tree1, [("Notes", #""pruned""#)], at: "2026-06-05T10:00:00Z", actor: "ann", session: "n1-notes")
                let stored = try await Self.expectWholeStore(store)
                #expect(stored.first { $0.position == position }?.type == EventType.schemaChanged.rawValue)
                _ = try n2.value.catchUp()
                #expect(try n2.value.local.schemaInForce().schema.layer(id: 0)?.field("Notes") != nil)
                #expect(try n2.value.local.attributes(SyncRig.tree1)["Notes"] == .string("pruned"))
                let r = try await SyncRig.sync(device.value, url2)
                #expect(r.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"], "\(r.json.serialized())")
                #expect(try device.value.attributes(SyncRig.tree1)["Notes"] == .string("pruned"))
                #expect(try n2.value.local.verify().ok)
            }
        }
    }
}
