import EditLog
import EditLogHub
import EditLogStore
import Foundation
import PostgresNIO
import Testing

/// One engine of the store contract under test, on a fresh store, removed afterwards.
struct EngineUnderTest: CustomTestStringConvertible, Sendable {
    enum Kind: String, Sendable, CaseIterable { case sqlite, postgres }
    let kind: Kind
    var testDescription: String { kind.rawValue }

    /// The server the PostgreSQL cases create their databases on (a role that may create databases), e.g.
    /// `postgres://postgres@127.0.0.1:55432/postgres` (`TestPostgres`: `EDITLOG_TEST_POSTGRES`, else a throwaway
    /// cluster where PostgreSQL is installed). None: those cases are skipped, saying why.
    static var postgresURL: String? { TestPostgres.server.url }
    static let all: [EngineUnderTest] = Kind.allCases.map { EngineUnderTest(kind: $0) }
    static var postgresSkipReason: String { TestPostgres.server.skipReason }

    /// Runs `body` on a new store of this engine whose log id is `logId`.
    func withStore<T>(logId: String = "log-under-test", clock: StepClock = StepClock(), _ body: (any EventStoreEngine) async throws -> T) async throws -> T {
        switch kind {
        case .sqlite:
            let tmp = TempPath()
            let store = try EventStore.create(at: tmp.path, logId: logId, clock: clock, ids: UUIDv7Generator(clock: clock, seed: 9))
            defer { try? store.close() }
            return try await body(store)
        case .postgres:
            return try await PostgresScratch.withDatabase { location in
                let store = try await PostgresEventStore.create(location, logId: logId, clock: clock)
                defer { store.close() }
                return try await body(store)
            }
        }
    }
}

/// A scratch database on the test server, dropped afterwards.
enum PostgresScratch {
    static func withDatabase<T>(_ body: (PostgresLocation) async throws -> T) async throws -> T {
        guard let url = EngineUnderTest.postgresURL else { throw EditLogError(.notFound, EngineUnderTest.postgresSkipReason) }
        let admin = try PostgresLocation(url)
        let name = "editlog_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await run(admin, "CREATE DATABASE \(name)")
        var location = admin
        location.database = name
        do {
            let result = try await body(location)
            try await run(admin, "DROP DATABASE \(name) WITH (FORCE)")
            return result
        } catch {
            try? await run(admin, "DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
    }

    /// The test server's URL (`EDITLOG_TEST_POSTGRES`, credentials included) naming `database` instead.
    static func url(_ database: String) -> String {
        let server = EngineUnderTest.postgresURL!
        return String(server[..<server.lastIndex(of: "/")!]) + "/" + database
    }

    /// One statement on its own connection (`sql` is the test's own text).
    static func run(_ location: PostgresLocation, _ sql: String, asRole role: String? = nil) async throws {
        let client = PostgresClient(configuration: .init(host: location.host, port: location.port, username: location.user, password: location.password,
                                                         database: location.database, tls: .disable), backgroundLogger: .init(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.withConnection { conn in
                if let role { try await conn.query(PostgresQuery(unsafeSQL: "SET ROLE \(role)"), logger: .init(label: "test")) }
                try await conn.query(PostgresQuery(unsafeSQL: sql), logger: .init(label: "test"))
            }
        }
    }
}

/// The store contract (`EventStoreEngine`), the same cases against every engine: positions, versions, the chain,
/// idempotence, concurrency, blobs and bad input.
@Suite struct EventStoreConformanceTests {
    static func event(_ stream: String, _ n: Int, id: UUID = UUID(), type: EventType = .featureDerived) -> NewEvent {
        NewEvent(id: id, stream: stream, type: type, payload: ["n": .int(Int64(n)), "s": .string("ü \(n)")],
                 context: EventContext(actor: "crew-\(n % 3)", device: "dev", clientTime: n % 2 == 0 ? "2026-05-0\(n % 9 + 1)T10:00:00.000Z" : nil),
                 session: n % 2 == 0 ? "s\(n)" : nil, cause: "test")
    }

    /// Every stored event read back: positions 1…n, each hash the chain's over the one before.
    static func expectChain(_ store: any EventStoreEngine, count: Int64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let events = try await store.events(after: 0, limit: Int(count) + 10)
        #expect(events.map(\.position) == (count == 0 ? [] : Array(1...count)), sourceLocation: sourceLocation)
        var previous = EventHash.genesis
        var encoder = EventHash.Encoder()
        for e in events {
            let values = EventHash.Values(position: e.position, id: e.id, stream: e.stream, streamVersion: e.streamVersion, type: e.type,
                                          payload: e.payload.serializedBytes(), actor: e.actor, device: e.device, session: e.session, cause: e.cause,
                                          clientTime: e.clientTime, recordedTime: e.recordedTime, originLog: e.origin.logId,
                                          originPosition: e.origin.position, originHash: e.origin.logId == store.logId && e.origin.position == e.position ? nil : e.origin.hash)
            #expect(EventHash.compute(using: &encoder, previous: previous, values) == e.hash, "position \(e.position)", sourceLocation: sourceLocation)
            previous = e.hash
        }
        let head = try await store.head()
        #expect(head == StoreHead(position: count, hash: count == 0 ? EventHash.genesis : previous), sourceLocation: sourceLocation)
    }

    /// Whether `engine` can run here; when it cannot, says so.
    static func runs(_ engine: EngineUnderTest) -> Bool {
        if engine.kind == .sqlite || EngineUnderTest.postgresURL != nil { return true }
        print("skipped (\(engine.kind)): \(EngineUnderTest.postgresSkipReason)")
        return false
    }

    @Test(arguments: EngineUnderTest.all)
    func positionsVersionsAndTheChain(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { store in
            #expect(try await store.head() == StoreHead(position: 0, hash: EventHash.genesis))
            #expect(store.format == EventStore.formatVersion)
            let first = try await store.append((0..<5).map { EventAppend(Self.event("0:{A}", $0), expected: $0 == 0 ? .noStream : .exact(Int64($0))) })
            let second = try await store.append((5..<9).map { EventAppend(Self.event($0 % 2 == 0 ? "0:{A}" : "0:{B}", $0)) })
            let recorded = (first + second).compactMap { if case .appended(let e) = $0 { return e } else { return nil } }
            #expect(recorded.map(\.position) == Array(1...9))
            #expect(recorded.map(\.streamVersion) == [1, 2, 3, 4, 5, 1, 6, 2, 7])
            #expect(recorded.allSatisfy { $0.origin.logId == "log-under-test" && $0.origin.position == $0.position && $0.origin.hash == $0.hash })
            try await Self.expectChain(store, count: 9)
            // Read back as appended, by position and by stream.
            #expect(try await store.events(after: 0, limit: 100) == recorded)
            #expect(try await store.events(after: 3, limit: 2).map(\.position) == [4, 5])
            #expect(try await store.events(inStream: "0:{B}").map(\.position) == [6, 8])
            #expect(try await store.events(inStream: "0:{none}").isEmpty)
        }
    }

    @Test(arguments: EngineUnderTest.all)
    func aWrongExpectedVersionIsAConflictAndTheBatchWritesNothing(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { store in
            _ = try await store.append([EventAppend(Self.event("0:{A}", 1), expected: .noStream)])
            let before = try await store.head()
            for (expected, words) in [(ExpectedVersion.noStream, "expected no stream"), (.exact(0), "expected 0"), (.exact(5), "expected 5")] {
                await #expect {
                    _ = try await store.append([EventAppend(Self.event("0:{B}", 2)), EventAppend(Self.event("0:{A}", 3), expected: expected)])
                } throws: { error in
                    let e = error as? EditLogError
                    return e?.kind == .conflict && e?.message.contains("0:{A}") == true && e?.message.contains(words) == true
                }
            }
            #expect(try await store.head() == before)
            #expect(try await store.events(inStream: "0:{B}").isEmpty)
        }
    }

    /// A batch decided at a head the log has moved past (a replica's write) is a conflict and appends nothing; at the
    /// head, it appends.
    @Test(arguments: EngineUnderTest.all)
    func aBatchDecidedAtAnOldHeadIsAConflictAndWritesNothing(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { store in
            _ = try await store.append([EventAppend(Self.event("0:{A}", 1)), EventAppend(Self.event("0:{B}", 2))])
            let before = try await store.head()
            await #expect {
                _ = try await store.append([EventAppend(Self.event("0:{C}", 3))], after: 1)
            } throws: { error in
                let e = error as? EditLogError
                return e?.kind == .conflict && e?.message.contains("head is at position 2") == true && e?.message.contains("decided at 1") == true
            }
            #expect(try await store.head() == before)
            let outcomes = try await store.append([EventAppend(Self.event("0:{C}", 3))], after: 2)
            guard case .appended(let e) = outcomes.first else { Issue.record("not appended: \(outcomes)"); return }
            #expect(e.position == 3)
        }
    }

    @Test(arguments: EngineUnderTest.all)
    func aBatchSentAgainAppendsNothing(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { store in
            let batch = (0..<4).map { EventAppend(Self.event("0:{A}", $0), expected: .exact(Int64($0))) }
            let first = try await store.append(batch)
            let head = try await store.head()
            // Sent again (a retry after a lost answer): every event is reported where it is, and its expectation is not checked.
            let again = try await store.append(batch)
            #expect(again == (1...4).map { AppendOutcome.alreadyStored(position: $0) })
            #expect(try await store.head() == head)
            // The same id twice in one batch: the second is the first.
            let id = UUID()
            let twice = try await store.append([EventAppend(Self.event("0:{C}", 7, id: id)), EventAppend(Self.event("0:{C}", 7, id: id))])
            #expect(twice.last == .alreadyStored(position: 5))
            #expect(first.count == 4)
            try await Self.expectChain(store, count: 5)
        }
    }

    @Test(arguments: EngineUnderTest.all)
    func concurrentAppendersLeaveNoGapAndLoseNothing(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { store in
            let writers = 6, batches = 8
            // Each writer appends to its own stream and, with optimistic concurrency, to a shared counter stream.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<writers {
                    group.addTask {
                        for b in 0..<batches {
                            _ = try await store.append([EventAppend(Self.event("0:{w\(w)}", b), expected: .exact(Int64(b)))])
                            while true {
                                let version = try await store.events(inStream: "0:{shared}").last?.streamVersion ?? 0
                                do {
                                    _ = try await store.append([EventAppend(Self.event("0:{shared}", w * 100 + b), expected: .exact(version))])
                                    break
                                } catch let e as EditLogError where e.kind == .conflict {
                                    continue  // another writer came first: read the version again
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = Int64(writers * batches * 2)
            try await Self.expectChain(store, count: total)
            #expect(try await store.events(inStream: "0:{shared}").map(\.streamVersion) == Array(1...Int64(writers * batches)))
            for w in 0..<writers { #expect(try await store.events(inStream: "0:{w\(w)}").count == batches) }
        }
    }

    @Test(arguments: EngineUnderTest.all)
    func eventsFromAnotherLogKeepTheirOriginAndHashTheSameInEveryEngine(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        // The reference: a SQLite log with its own events and one imported from elsewhere.
        let tmp = TempPath()
        let clock = StepClock()
        let source = try EventStore.create(at: tmp.path, logId: "log-a", clock: clock, ids: UUIDv7Generator(clock: clock, seed: 4))
        defer { try? source.close() }
        let foreign = EventOrigin(logId: "log-b", position: 17, hash: Array(repeating: 9, count: 32))
        var imported = EventAppend(Self.event("0:{X}", 3))
        imported.origin = foreign
        imported.recordedTime = "2026-05-01T10:00:00.000Z"
        _ = try await source.append((0..<3).map { EventAppend(Self.event("0:{X}", $0)) } + [imported])
        let reference = try source.events(after: 0, limit: 10)
        // Copied event by event into a store of this engine with the same log id: the same positions, hashes and head.
        try await engine.withStore(logId: "log-a") { store in
            _ = try await store.append(reference.map { EventAppend(recorded: $0) })
            #expect(try await store.events(after: 0, limit: 10) == reference)
            #expect(try await store.head() == (try source.head()))
        }
    }

    @Test(arguments: EngineUnderTest.all)
    func blobsByTheirSHA256(_ engine: EngineUnderTest) async throws {
        guard Self.runs(engine) else { return }
        try await engine.withStore { (store: any EventStoreEngine) async throws in
            var rng = SplitMix64(seed: 11)
            let small = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let big = (0..<(Int(BlobStorage.inlineLimit) * 2 + 12345)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            #expect(try await store.putBlob(small))
            #expect(try await store.putBlob(big))
            #expect(try await store.putBlob(small) == false)
            #expect(try await store.blob(sha256: EventHash.sha256(small)) == small)
            #expect(try await store.blob(sha256: EventHash.sha256(big)) == big)
            #expect(try await store.blob(sha256: Array(repeating: 1, count: 32)) == nil)
            #expect(try await store.putBlob([]))
            #expect(try await store.blob(sha256: EventHash.sha256([UInt8]())) == [])
        }
    }
}

/// What only the PostgreSQL engine has to prove: its database refuses changes to the log, and its verify finds them.
@Suite(.enabled(if: EngineUnderTest.postgresURL != nil, "no PostgreSQL test server: EDITLOG_TEST_POSTGRES is not set and PostgreSQL is not installed here (or its throwaway cluster did not start)"))
struct PostgresStoreTests {
    @Test func theDatabaseRefusesUpdatesDeletesAndGapsAndTheAppenderRoleHasNoGrantForThem() async throws {
        try await PostgresScratch.withDatabase { location in
            let store = try await PostgresEventStore.create(location, logId: "log-pg")
            defer { store.close() }
            _ = try await store.append((0..<3).map { EventAppend(EventStoreConformanceTests.event("0:{A}", $0)) })
            _ = try await store.putBlob([1, 2, 3])
            for sql in ["UPDATE events SET actor = 'mallory' WHERE position = 2", "DELETE FROM events WHERE position = 3", "TRUNCATE events",
                        "UPDATE blobs SET bytes = '\\x00'", "DELETE FROM blobs", "UPDATE editlog_meta SET value = 'x'",
                        "UPDATE editlog_head SET position = 1", "DELETE FROM editlog_head"] {
                await #expect(throws: (any Error).self, "\(sql)") { try await PostgresScratch.run(location, sql) }
            }
            // A row past a gap, even with a valid-looking hash.
            await #expect(throws: (any Error).self) {
                try await PostgresScratch.run(location, """
                    INSERT INTO events VALUES (9, gen_random_uuid(), 's', 1, 't', '\\x7b7d', 'a', 'd', NULL, 'c', NULL, 'r', 'log-pg', 9, NULL, '\\x\(String(repeating: "00", count: 32))')
                    """)
            }
            // As the appender role, the grant itself is missing (the triggers aside).
            for sql in ["UPDATE events SET actor = 'x'", "DELETE FROM events", "DELETE FROM blobs"] {
                await #expect {
                    try await PostgresScratch.run(location, sql, asRole: PostgresEventStore.appenderRole)
                } throws: { error in String(reflecting: error).contains("42501") || "\(error)".contains("permission denied") }
            }
            #expect(try await store.verifyChain().position == 3)
        }
    }

    @Test func verifyNamesTheFirstAlteredEvent() async throws {
        try await PostgresScratch.withDatabase { location in
            let store = try await PostgresEventStore.create(location, logId: "log-pg")
            defer { store.close() }
            _ = try await store.append((0..<6).map { EventAppend(EventStoreConformanceTests.event("0:{A}", $0)) })
            #expect(try await store.verifyChain() == (try await store.head()))
            // The owner turns the trigger off and changes a payload byte: verify names the position.
            try await PostgresScratch.run(location, "ALTER TABLE events DISABLE TRIGGER events_append_only")
            try await PostgresScratch.run(location, "UPDATE events SET payload = convert_to('{\"n\":99}', 'UTF8') WHERE position = 4")
            try await PostgresScratch.run(location, "ALTER TABLE events ENABLE TRIGGER events_append_only")
            await #expect {
                _ = try await store.verifyChain()
            } throws: { error in
                let e = error as? EditLogError
                return e?.kind == .corrupt && e?.message.contains("position 4") == true
            }
        }
    }

    /// A store made before the streams table (schema 1), holding events, is upgraded when opened: each stream's version
    /// comes from its events, so expected versions hold across the upgrade, and `editlog_append` continues the chain
    /// with the hashes SQLite gives the same events.
    @Test func aSchema1StoreIsUpgradedWhenOpenedAndItsStreamsKeepTheirVersions() async throws {
        try await PostgresScratch.withDatabase { location in
            // The reference: the same events in a SQLite log of the same id.
            let tmp = TempPath()
            let clock = StepClock()
            let reference = try EventStore.create(at: tmp.path, logId: "log-pg", clock: clock, ids: UUIDv7Generator(clock: clock, seed: 3))
            defer { try? reference.close() }
            let first = [EventAppend(EventStoreConformanceTests.event("0:{A}", 0)), EventAppend(EventStoreConformanceTests.event("0:{B}", 1)),
                         EventAppend(EventStoreConformanceTests.event("0:{A}", 2)), EventAppend(EventStoreConformanceTests.event("0:{A}", 3))]
            _ = try await reference.append(first)
            let old = try await PostgresEventStore.create(location, logId: "log-pg", schemaVersion: 1)
            old.close()
            // Schema 1's appenders wrote rows as they are: copied here by SQL.
            func text(_ s: String?) -> String { s.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" } ?? "NULL" }
            func bytes(_ b: [UInt8]?) -> String { b.map { "'\\x\(Hex.encode($0))'::bytea" } ?? "NULL" }
            for e in try reference.events(after: 0, limit: 10) {
                try await PostgresScratch.run(location, """
                    INSERT INTO events VALUES (\(e.position), '\(e.id.uuidString)', \(text(e.stream)), \(e.streamVersion), \(text(e.type)),
                        \(bytes(e.payload.serializedBytes())), \(text(e.actor)), \(text(e.device)), \(text(e.session)), \(text(e.cause)),
                        \(text(e.clientTime)), \(text(e.recordedTime)), \(text(e.origin.logId)), \(e.origin.position), NULL, \(bytes(e.hash)))
                    """)
                try await PostgresScratch.run(location, "UPDATE editlog_head SET position = \(e.position), hash = \(bytes(e.hash))")
            }
            let store = try await PostgresEventStore.open(location, clock: clock)
            defer { store.close() }
            // Stream B is at version 1: expecting 0 is refused, naming it; A at 3 appends at position 5.
            await #expect {
                _ = try await store.append([EventAppend(EventStoreConformanceTests.event("0:{B}", 4), expected: .exact(0))])
            } throws: { ($0 as? EditLogError)?.kind == .conflict && "\($0)".contains("0:{B} is at version 1") }
            var next = EventAppend(EventStoreConformanceTests.event("0:{A}", 5), expected: .exact(3))
            next.recordedTime = "2026-06-01T10:00:00.000Z"
            let outcome = try await store.append([next])
            let expected = try await reference.append([next])
            #expect(outcome.count == 1 && expected.count == 1)
            guard case .appended(let stored) = outcome[0], case .appended(let there) = expected[0] else { Issue.record("not appended"); return }
            #expect(stored.position == 5 && stored.streamVersion == 4 && stored.hash == there.hash)
            #expect(try await store.verifyChain() == (try reference.head()))
            // Opened again: nothing to upgrade, the same store.
            let again = try await PostgresEventStore.open(location)
            again.close()
        }
    }

    @Test func aSecondCreateAndAnOpenOfAnEmptyDatabaseAreRefused() async throws {
        try await PostgresScratch.withDatabase { location in
            await #expect {
                _ = try await PostgresEventStore.open(location)
            } throws: { ($0 as? EditLogError)?.kind == .notFound && "\($0)".contains("hub init") }
            let store = try await PostgresEventStore.create(location, logId: "log-pg")
            store.close()
            await #expect {
                _ = try await PostgresEventStore.create(location, logId: "log-other")
            } throws: { ($0 as? EditLogError)?.kind == .conflict }
            let again = try await PostgresEventStore.open(location)
            #expect(again.logId == "log-pg")
            again.close()
        }
    }

    @Suite(.tags(.process)) struct ProcessTests {
        /// `hub init` from the fixture's files, `verify` of the store (the same head `init` gives a log file with the
        /// same log id is checked by the conformance suite), a refused second init, and a tampered row named by `verify`.
        @Test func hubInitThenVerifyThenTamper() async throws {
            try await PostgresScratch.withDatabase { location in
                let url = PostgresScratch.url(location.database)
                let f = Paths.trees
                let args = ["hub", "init", url, "--service", f + "/service.json", "--webmap", f + "/webmap.json", "--rules", f + "/rules.json",
                            "--data"] + ["Species", "Neighborhoods", "Trees", "Inspections"].map { f + "/baseline/\($0).json" } + ["--json"]
                var r = try CLI.run(args)
                #expect(r.status == 0, "\(r.stderr)")
                let created = try JSONParser.parse(Array(r.stdout.utf8))
                let events = created["events"]?.intValue ?? 0
                #expect(events > 400)
                r = try CLI.run(["verify", url, "--json"])
                let verified = try JSONParser.parse(Array(r.stdout.utf8))
                #expect(r.status == 0 && verified["ok"]?.boolValue == true && verified["events"]?.intValue == events, "\(r.stdout) \(r.stderr)")
                #expect(verified["headHash"] == created["head"])
                // A second init writes nothing and says why.
                r = try CLI.run(args)
                #expect(r.status == 67 && r.stderr.contains("already holds an EditLog store"))
                // The owner turns the trigger off and rewrites an actor: verify exits 69 naming the position.
                try await PostgresScratch.run(location, "ALTER TABLE events DISABLE TRIGGER events_append_only")
                try await PostgresScratch.run(location, "UPDATE events SET actor = 'mallory' WHERE position = 7")
                r = try CLI.run(["verify", url, "--json"])
                let broken = try JSONParser.parse(Array(r.stdout.utf8))
                #expect(r.status == 69 && broken["firstBadPosition"]?.intValue == 7, "\(r.stdout) \(r.stderr)")
                // A database that holds no store, and a role that does not exist: a clear error at once.
                r = try CLI.run(["verify", PostgresScratch.url("postgres")])
                #expect(r.status == 68 && r.stderr.contains("hub init"))
                r = try CLI.run(["hub", "init", "postgres://nobody_here@\(location.host):\(location.port)/x", "--service", f + "/service.json"])
                #expect(r.status == 74 && r.stderr.contains("nobody_here"))
            }
        }
    }
}

/// A store's address and credentials: no server needed.
@Suite struct PostgresLocationTests {
    @Test func credentialsComeFromTheURLThenPGPASSWORDThenPgpass() throws {
        let tmp = TempPath()
        try FileManager.default.createDirectory(atPath: tmp.path, withIntermediateDirectories: true)
        let pgpass = tmp.path + "/.pgpass"
        try "# comment\nother:5432:*:u:nope\nhub.example:5433:edits:alice:s3cr\\:et\n*:*:*:*:fallback\n".write(toFile: pgpass, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: pgpass)
        let inURL = try PostgresLocation("postgres://alice:pw%40x@hub.example:5433/edits", environment: ["PGPASSWORD": "env"], home: tmp.path)
        #expect(inURL.password == "pw@x" && inURL.description == "postgres://alice@hub.example:5433/edits")
        #expect(try PostgresLocation("postgres://alice@hub.example:5433/edits", environment: ["PGPASSWORD": "env"], home: tmp.path).password == "env")
        #expect(try PostgresLocation("postgres://alice@hub.example:5433/edits", environment: [:], home: tmp.path).password == "s3cr:et")
        #expect(try PostgresLocation("postgres://bob@db/x", environment: [:], home: tmp.path).password == "fallback")
        // A pgpass others can read is ignored, as libpq ignores it.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pgpass)
        #expect(try PostgresLocation("postgres://bob@db/x", environment: [:], home: tmp.path).password == nil)
        #expect(PostgresLocation.redacted("postgres://a:secret@h/d").contains("secret") == false)
        #expect(throws: EditLogError.self) { try PostgresLocation("postgres://h", environment: [:], home: tmp.path) }
    }
}
