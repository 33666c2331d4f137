import EditLog
import EditLogStore
import Foundation
import GRDB
import Testing

@Suite struct StoreInvariantTests {
    func ctx() -> EventContext { EventContext(actor: "a", device: "d", clientTime: nil) }

    @Test func aLocalIdCollisionIsAConflictNamingTheIdAndWritesNothing() throws {
        let tmp = TempPath()
        let store = try EventStore.create(at: tmp.path, clock: StepClock(), ids: UUIDv7Generator(clock: StepClock(), seed: 3))
        let id = store.ids.next()
        let e = NewEvent(id: id, stream: "0:{X}", type: .featureDerived, payload: ["k": 1], context: ctx(), session: nil, cause: "test")
        let first = try store.write { _, a in try a.append(e) }
        #expect(first.position == 1)
        // A second local append of the same id, after another event in the same transaction: the whole transaction fails.
        let other = NewEvent(id: store.ids.next(), stream: "0:{Y}", type: .featureDerived, payload: 2, context: ctx(), session: nil, cause: "t")
        #expect {
            try store.write { _, a in try a.append(other); try a.append(e) }
        } throws: { error in
            let e = error as? EditLogError
            return e?.kind == .conflict && e?.message.contains(id.uuidString.lowercased()) == true && e?.message.contains("position 1") == true
        }
        try store.write { _, a in
            for i in 0..<10 { try a.append(NewEvent(id: store.ids.next(), stream: "0:{Y\(i % 3)}", type: .featureDerived, payload: .int(Int64(i)), context: ctx(), session: nil, cause: "t")) }
        }
        let positions = try store.read { db in try Int64.fetchAll(db, sql: "SELECT position FROM events ORDER BY position") }
        #expect(positions == Array(1...11))
    }

    @Test func anImportedEventAlreadyStoredIsReportedNotWritten() throws {
        let tmp = TempPath()
        let store = try EventStore.create(at: tmp.path, clock: StepClock(), ids: UUIDv7Generator(clock: StepClock(), seed: 5))
        let e = NewEvent(id: store.ids.next(), stream: "0:{X}", type: .featureDerived, payload: ["k": 1], context: ctx(), session: nil, cause: "test")
        let origin = EventOrigin(logId: "other-log", position: 42, hash: Array(repeating: 7, count: 32))
        let first = try store.write { _, a in try a.appendImported(e, recordedTime: nil, origin: origin) }
        let again = try store.write { _, a in try a.appendImported(e, recordedTime: nil, origin: origin) }
        guard case .appended(let recorded) = first else { Issue.record("first import: \(first)"); return }
        #expect(recorded.position == 1 && recorded.origin == origin)
        #expect(again == .alreadyStored(position: 1))
        #expect(try store.read { db in try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM events") } == 1)
    }

    /// An import's append in place (`appendImported(_: inout RecordedEvent, …)`) writes the row the other
    /// `appendImported` writes, and leaves the event as that one returns it: two logs made alike, the same foreign
    /// events appended each way (with and without a guess of their hash), hold the same rows. A second append of an
    /// id names the stored position and leaves the event untouched.
    @Test func anEventAppendedInPlaceIsTheOneAppendedAsNew() throws {
        let (tmpA, tmpB) = (TempPath(), TempPath())
        let a = try EventStore.create(at: tmpA.path, clock: StepClock(), ids: UUIDv7Generator(clock: StepClock(), seed: 21))
        let b = try EventStore.create(at: tmpB.path, clock: StepClock(), ids: UUIDv7Generator(clock: StepClock(), seed: 21))
        let ids = UUIDv7Generator(clock: StepClock(), seed: 22)
        var foreign: [RecordedEvent] = []
        for i in 0..<6 {
            let origin = EventOrigin(logId: "other-log", position: Int64(100 + i), hash: Array(repeating: UInt8(i), count: 32))
            foreign.append(RecordedEvent(position: Int64(100 + i), id: ids.next(), stream: "0:{X\(i % 2)}", streamVersion: Int64(i / 2 + 1),
                                         type: EventType.featureDerived.rawValue, payload: ["k": .int(Int64(i)), "note": i == 3 ? .null : .string("é\(i)")],
                                         actor: "field-\(i % 3)", device: "dev", session: i == 4 ? nil : "s\(i)", cause: "rule:x",
                                         clientTime: i == 2 ? nil : "2026-01-0\(i + 1)T00:00:00.000Z", recordedTime: "2026-02-01T00:00:00.000Z",
                                         origin: origin, hash: origin.hash))
        }
        var asNew: [RecordedEvent] = []
        try a.write { _, app in
            for e in foreign {
                let n = NewEvent(id: e.id, stream: e.stream, type: .featureDerived, payload: e.payload,
                                 context: EventContext(actor: e.actor, device: e.device, clientTime: e.clientTime), session: e.session, cause: e.cause)
                guard case .appended(let r) = try app.appendImported(n, recordedTime: e.recordedTime, origin: e.origin) else { Issue.record("not appended"); return }
                asNew.append(r)
            }
        }
        var inPlace: [RecordedEvent] = []
        try b.write { _, app in
            var guesser = ChainGuesser(position: app.headPosition, hash: app.headHash, streamVersions: [:])
            for (i, var e) in foreign.enumerated() {
                let payload = e.payload.serializedBytes()
                // Every other event with its hash computed ahead, as a bundle's reading thread does.
                let guess = i % 2 == 0 ? guesser.next(e, canonicalPayload: payload) : nil
                if guess == nil { _ = guesser.next(e, canonicalPayload: payload) }
                let stored = try app.appendImported(&e, canonicalPayload: payload, guess: guess)
                #expect(stored == nil)
                inPlace.append(e)
            }
            // Again: already stored, named by position, the event as it was.
            var again = foreign[2]
            let stored = try app.appendImported(&again, canonicalPayload: again.payload.serializedBytes())
            #expect(stored == inPlace[2].position)
            #expect(again == foreign[2])
        }
        #expect(inPlace == asNew)
        let rows = { (s: EventStore) in try s.read { db in try Row.fetchAll(db, sql: "SELECT * FROM events ORDER BY position") } }
        let (rowsA, rowsB) = (try rows(a), try rows(b))
        #expect(rowsA == rowsB)
        #expect(rowsB.count == foreign.count)
    }

    /// A hash computed ahead (`ChainGuess`) is taken only for the position, stream version and previous hash it was
    /// computed for; otherwise the appender computes its own. What `ChainGuesser` computes for the true position and
    /// version is the appender's hash (the reading thread and the appender chain alike). Debug builds check every guess
    /// taken: a wrong hash in a guess that holds is caught, which shows it was taken.
    @Test func aHashComputedAheadIsTakenOnlyWhereItsGuessHolds() throws {
        let tmp = TempPath()
        let store = try EventStore.create(at: tmp.path, clock: StepClock(), ids: UUIDv7Generator(clock: StepClock(), seed: 9))
        let origin = EventOrigin(logId: "other-log", position: 42, hash: Array(repeating: 7, count: 32))
        let bogus = [UInt8](repeating: 0xAB, count: 32)
        var head = try store.write { _, a in
            try a.append(NewEvent(id: store.ids.next(), stream: "0:{X}", type: .featureDerived, payload: ["k": 1], context: ctx(), session: nil, cause: "test"))
        }
        for miss in 0..<3 {
            let e = NewEvent(id: store.ids.next(), stream: "0:{X}", type: .featureDerived, payload: ["k": .int(Int64(miss))], context: ctx(), session: nil, cause: "test")
            // Each guess misses one of the three.
            let guess = ChainGuess(position: head.position + (miss == 0 ? 2 : 1), streamVersion: head.streamVersion + (miss == 1 ? 2 : 1),
                                   previous: miss == 2 ? bogus : head.hash, hash: bogus)
            let outcome = try store.write { _, a in try a.appendImported(e, recordedTime: "2026-01-01T00:00:00.000Z", origin: origin, guess: guess) }
            guard case .appended(let r) = outcome else { Issue.record("\(outcome)"); return }
            var guesser = ChainGuesser(position: head.position, hash: head.hash, streamVersions: [:])
            let truth = guesser.next(r, canonicalPayload: r.payload.serializedBytes())
            #expect(r.position == head.position + 1 && r.hash == truth.hash && r.hash != bogus)
            head = r
        }
        #if DEBUG
        let e = NewEvent(id: store.ids.next(), stream: "0:{X}", type: .featureDerived, payload: ["k": 9], context: ctx(), session: nil, cause: "test")
        #expect(throws: EditLogError.self) {
            try store.write { _, a in
                try a.appendImported(e, recordedTime: "2026-01-01T00:00:00.000Z", origin: origin,
                                     guess: ChainGuess(position: head.position + 1, streamVersion: head.streamVersion + 1, previous: head.hash, hash: bogus))
            }
        }
        #endif
        #expect(try store.read { db in try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM events") } == 4)
    }

    /// `ChainGuesser` chains its guesses one after the other; in a stream the log held, it counts on from the log's
    /// version, in any other it takes the origin's.
    @Test func theGuesserCountsOnInTheStreamsTheLogHeld() {
        let origin = EventOrigin(logId: "other-log", position: 1, hash: Array(repeating: 7, count: 32))
        func event(_ stream: String, version: Int64) -> RecordedEvent {
            RecordedEvent(position: 1, id: UUID(), stream: stream, streamVersion: version, type: "FeatureDerived", payload: ["k": 1],
                          actor: "a", device: "d", session: nil, cause: "c", clientTime: nil, recordedTime: "2026-01-01T00:00:00.000Z",
                          origin: origin, hash: origin.hash)
        }
        var guesser = ChainGuesser(position: 5, hash: EventHash.genesis, streamVersions: ["schema": 1])
        let a = guesser.next(event("schema", version: 1), canonicalPayload: Array(#"{"k":1}"#.utf8))
        let b = guesser.next(event("0:{X}", version: 3), canonicalPayload: Array(#"{"k":1}"#.utf8))
        let c = guesser.next(event("schema", version: 2), canonicalPayload: Array(#"{"k":1}"#.utf8))
        #expect((a.position, a.streamVersion, a.previous) == (6, 2, EventHash.genesis))
        #expect((b.position, b.streamVersion, b.previous) == (7, 3, a.hash))
        #expect((c.position, c.streamVersion, c.previous) == (8, 3, b.hash))
        #expect(Set([a.hash, b.hash, c.hash]).count == 3)
    }

    /// An id generator that hands out one fixed id: a reused or badly seeded generator.
    final class FixedIDs: IDGenerator, @unchecked Sendable {
        let id: UUID
        init(_ id: UUID) { self.id = id }
        func next() -> UUID { id }
    }

    @Test func recordingWithAReusedGeneratorIsAConflictNotASilentDrop() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let tree = try Fixture.globalIds("Trees")[0]
        log.close()
        let stored = try RawLog.ids(tmp.path)[4]
        let reused = stored.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        let again = try EditLog.open(at: tmp.path, ids: FixedIDs(reused))
        let before = try again.eventCount()
        let e = try again.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"s1"}"#, #"{"op":"set","field":"DBH","value":3}"#, #"{"op":"finish"}"#)
        #expect(e.kind == .conflict)
        #expect(e.message.contains(reused.uuidString.lowercased()) && e.message.contains("position 5"))
        #expect(try again.eventCount() == before)
    }

    @Test func expectedVersionConflictsAreClearErrors() throws {
        let tmp = TempPath()
        let store = try EventStore.create(at: tmp.path)
        let s = "3:{S}"
        func append(_ v: ExpectedVersion) throws {
            try store.write { _, a in _ = try a.append(NewEvent(id: store.ids.next(), stream: s, type: .featureDerived, payload: 1, context: ctx(), session: nil, cause: "t"), expected: v) }
        }
        try append(.noStream)
        try append(.exact(1))
        #expect(throws: EditLogError.self) { try append(.exact(1)) }
        #expect(throws: EditLogError.self) { try append(.noStream) }
        // The append must throw, and throw the conflict naming both versions: a success is a failure here.
        #expect {
            try append(.exact(5))
        } throws: { error in
            guard let e = error as? EditLogError else { return false }
            return e.kind == .conflict && e.message.contains("is at version 2; expected 5")
        }
        // A failed append wrote nothing.
        #expect(try store.read { db in try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM events") } == 2)
    }

    @Test func triggersRejectUpdateAndDelete() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        try RawLog.write(log.path) { db in
            #expect(throws: DatabaseError.self) { try db.execute(sql: "UPDATE events SET actor = 'mallory' WHERE position = 1") }
            #expect(throws: DatabaseError.self) { try db.execute(sql: "DELETE FROM events") }
        }
    }

    @Test func aFileThatIsNotALogIsRefused() throws {
        let tmp = TempPath()
        let q = try DatabaseQueue(path: tmp.path)
        try q.write { db in try db.execute(sql: "CREATE TABLE t(x)") }
        try q.close()
        do { _ = try EditLog.open(at: tmp.path); Issue.record("opened") } catch {
            #expect(error.kind == .corrupt && error.message.contains("not an EditLog log"))
        }
        let text = TempPath()
        try Data("hello, not sqlite at all, just text padding padding padding padding padding padding padding padding padding padding".utf8).write(to: URL(fileURLWithPath: text.path))
        do { _ = try EditLog.open(at: text.path); Issue.record("opened") } catch {
            #expect(error.kind == .corrupt)
        }
        do { _ = try EditLog.open(at: "/nonexistent/log.sqlite"); Issue.record("opened") } catch { #expect(error.kind == .notFound) }
    }

    @Test func aLogFromANewerVersionIsRefused() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        try RawLog.write(log.path) { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')")
        }
        log.close()
        do { _ = try EditLog.open(at: tmp.path); Issue.record("opened") } catch {
            #expect(error.kind == .unsupported && error.message.contains("newer EditLog"))
        }
    }

    @Test func initNeverOverwritesAndLeavesNothingOnError() throws {
        let tmp = TempPath()
        _ = try Fixture.treesLog(at: tmp.path, baseline: false)
        #expect(throws: EditLogError.self) { try Fixture.treesLog(at: tmp.path, baseline: false) }
        let bad = TempPath()
        var broken = try Fixture.json("baseline/Trees.json")
        if case .object(var o) = broken, case .array(var fs)? = o["features"], case .object(var f) = fs[3], case .object(var attrs)? = f["attributes"] {
            attrs["DBH"] = 5000
            f["attributes"] = .object(attrs); fs[3] = .object(f); o["features"] = .array(fs); broken = .object(o)
        }
        do {
            _ = try EditLog.create(at: bad.path, service: [("service.json", try Fixture.json("service.json"))], baseline: [BaselineSet(name: "Trees.json", layer: nil, json: broken)])
            Issue.record("created")
        } catch let error as EditLogError {
            #expect(error.description.contains("features[3]") && error.description.contains("range"))
        }
        #expect(!FileManager.default.fileExists(atPath: bad.path))
        let siblings = try FileManager.default.contentsOfDirectory(atPath: (bad.path as NSString).deletingLastPathComponent)
        #expect(!siblings.contains { $0.hasPrefix((bad.path as NSString).lastPathComponent + ".partial") })
    }
}

@Suite struct VerifyStructureTests {
    func tampered(_ sql: String) throws -> VerifyReport {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        try RawLog.writeWithoutTransaction(log.path) { db in try db.execute(sql: sql) }
        log.close()
        return try EditLog.verify(at: tmp.path)
    }

    @Test func aNeuteredTriggerIsFound() throws {
        let r = try tampered("""
            DROP TRIGGER events_append_only_update;
            CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events WHEN 0 BEGIN SELECT RAISE(ABORT, 'x'); END;
            """)
        #expect(!r.ok && r.problems.contains { $0.contains("trigger events_append_only_update was redefined") })
    }

    @Test func aDroppedConstraintIsFound() throws {
        let r = try tampered("PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = replace(sql, 'cause           TEXT    NOT NULL', 'cause           TEXT') WHERE name = 'events'; PRAGMA writable_schema = OFF;")
        #expect(!r.ok && r.problems.contains { $0.contains("table events was redefined") })
    }

    @Test func logMetaIsFixed() throws {
        let r = try tampered("INSERT INTO log_meta (key, value) VALUES ('note', 'x')")
        #expect(!r.ok && r.problems.contains { $0.contains("log_meta was changed") })
    }

    @Test func aTamperedSchemaEventIsNamedByPosition() throws {
        let r = try tampered("DROP TRIGGER events_append_only_update; UPDATE events SET payload = replace(payload, '\"name\":\"Trees\"', '\"name\":\"Treez\"') WHERE position = 1;")
        #expect(r.firstBadPosition == 1)
    }

    @Test func aMissingAttachmentIsNamedByItsEvent() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        let events = try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(newGID(1))","geometry":{"x":-122.6,"y":45.5}}"#,
                                 #"{"op":"attach","attachmentId":"\#(newGID(2))","name":"a.jpg","contentType":"image/jpeg","dataBase64":"AAEC"}"#, #"{"op":"finish"}"#)
        let staged = try #require(events.first { $0.type == "AttachmentStaged" })
        try RawLog.writeWithoutTransaction(log.path) { db in try db.execute(sql: "DROP TRIGGER blobs_append_only_delete; DELETE FROM blobs") }
        log.close()
        let r = try EditLog.verify(at: tmp.path)
        #expect(r.firstBadPosition == staged.position && r.problems.contains { $0.contains("are missing") })
    }

    @Test func initRemovesPartialsOfDeadProcesses() throws {
        let tmp = TempPath()
        let stale = tmp.path + ".partial-999999-1"
        let live = tmp.path + ".partial-\(getpid())-7"
        for p in [stale, live] { _ = FileManager.default.createFile(atPath: p, contents: Data("x".utf8)) }
        defer { try? FileManager.default.removeItem(atPath: live) }
        _ = try Fixture.treesLog(at: tmp.path, baseline: false)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: live), "a partial of a running process is left alone")
    }
}
