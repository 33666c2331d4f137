import EditLog
import EditLogProjections
import Foundation
import GRDB
import Testing

/// A historic state read over a checkpoint in place (the rows the events after it reach in a scratch file, every
/// other row from the checkpoint: `Replay.readableState`) holds and answers what the state replayed from the log's
/// first event holds and answers.
@Suite struct HistoricStateTests {
    typealias Rows = [String: [[DatabaseValue]]]

    /// Every row of every projection table, by rowid, with it (an overlay's view shows a table's rowid as its column
    /// `rowid`; a feature table's is `_oid`).
    static func rows(_ state: HistoricState) throws -> Rows {
        try state.readProjections { s in
            var out: Rows = [:]
            for t in try ProjectionTables.all(s.db) {
                let info = try Row.fetchAll(s.db, sql: "SELECT name, type, pk FROM pragma_table_info(?, 'main') ORDER BY cid", arguments: [t])
                let alias = info.contains { ($0["pk"] as Int64) == 1 && ($0["type"] as String) == "INTEGER" }
                let columns = (alias ? [] : ["rowid"]) + info.map { ProjectionTables.quoted($0["name"]) }
                let sql = "SELECT \(columns.joined(separator: ", ")) FROM \(t) ORDER BY \(alias ? "_oid" : "rowid")"
                out[t] = try Row.fetchAll(s.db, sql: sql).map { r in (0..<r.count).map { r[$0] as DatabaseValue } }
            }
            return out
        }
    }

    /// Whether the state is read over a checkpoint (its connection has the overlay's views).
    static func overCheckpoint(_ state: HistoricState) throws -> Bool {
        try state.readProjections { (try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM sqlite_temp_master WHERE type = 'view'") ?? 0) > 0 }
    }

    /// What the feature service asks, layer by layer: every feature in order, a where clause's count, ids and extent,
    /// pages of 7 by ObjectID, identities, the ObjectID of each GlobalID, and the attachments of every feature.
    static func answers(_ state: HistoricState) throws -> [String] {
        var out: [String] = []
        for l in state.schema.layers {
            let ref = String(l.id)
            let all = try state.queryFeatures(layer: ref, FeatureQuery())
            out.append("\(l.name): " + JSONValue.array(all.features).serialized())
            if l.field("Condition") != nil {
                let good = FeatureQuery(predicate: .compare(.field("Condition"), .equal, .value("Good")))
                out.append("\(l.name) Good: \(try state.queryCount(layer: ref, good)) \(try state.queryObjectIds(layer: ref, good))")
                out.append("\(l.name) Good extent: \(try state.queryExtent(layer: ref, good))")
            }
            let ids = try state.queryIdentities(layer: ref, FeatureQuery())
            out.append("\(l.name) ids: \(ids.map { "\($0.objectId)=\($0.globalId)" })")
            for offset in stride(from: 0, to: ids.count + 7, by: 7) {
                let page = try state.queryFeatures(layer: ref, FeatureQuery(orderBy: [(field: l.objectIdField ?? "OBJECTID", descending: false)], offset: offset, limit: 7))
                out.append("\(l.name) page \(offset): \(page.exceededTransferLimit) " + JSONValue.array(page.features).serialized())
            }
            for i in ids { out.append("\(l.name) \(i.globalId): \(String(describing: try state.objectId(layer: ref, globalId: i.globalId)))") }
            out.append("\(l.name) attachments: \(try state.attachmentInfos(parents: ids.map(\.globalId)).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" })")
        }
        return out
    }

    static func reference(_ log: EditLog, at positions: [Int64], _ tmp: TempPath) throws -> [Int64: (rows: Rows, answers: [String])] {
        var out: [Int64: (rows: Rows, answers: [String])] = [:]
        for p in positions {
            let s = try log.historicState(at: p, file: tmp.path + ".reference-\(p)")
            defer { s.close() }
            #expect(try !overCheckpoint(s), "without checkpoints, \(p) is replayed from the first event")
            out[p] = (try rows(s), try answers(s))
        }
        return out
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func aStateOverACheckpointEqualsTheReplayFromTheStart(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try ReplayExportTests.randomLog(at: tmp.path, seed: seed, steps: 200)
        defer { ReplayExportTests.removeCheckpoints(log) }
        let head = try log.eventCount()
        let every = max(5, head / 5)
        var rng = SplitMix64(seed: seed &+ 56)
        var positions: [Int64] = [every, every + 1, 2 * every - 1, head]
        for _ in 0..<4 { positions.append(every + Int64(rng.next() % UInt64(head - every + 1))) }
        let reference = try Self.reference(log, at: positions, tmp)
        #expect(try !log.createCheckpoints(every: every).isEmpty)
        for p in positions {
            let s = try log.historicState(at: p, file: tmp.path + ".overlay-\(p)")
            defer { s.close() }
            #expect(try Self.overCheckpoint(s), "\(p) is read over the checkpoint at \((p / every) * every)")
            let rows = try Self.rows(s)
            for (table, expected) in reference[p]!.rows { #expect(rows[table] == expected, "\(table) at \(p) of \(head)") }
            #expect(rows.keys.sorted() == reference[p]!.rows.keys.sorted())
            #expect(try Self.answers(s) == reference[p]!.answers, "answers at \(p) of \(head)")
        }
        // Features created, edited and deleted, and attachments added, renamed and detached after a checkpoint.
        let last = try log.historicState(at: head, file: tmp.path + ".last")
        defer { last.close() }
        let tables = try Self.rows(last)
        #expect(tables.contains { ProjectionTables.featureLayer($0.key) != nil && $0.value.contains { $0[$0.count - 3] == 1.databaseValue } }, "a deleted feature")
        #expect(tables["p_attachments"]?.isEmpty == false)
    }

    /// A feature deleted after the checkpoint takes its attachments (in the checkpoint) along.
    @Test func aFeatureDeletedAfterTheCheckpointTakesItsAttachmentsAlong() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        defer { ReplayExportTests.removeCheckpoints(log) }
        let (tree, other) = (try Fixture.globalIds("Trees")[7], try Fixture.globalIds("Trees")[8])
        for (t, n) in [(tree, 57), (other, 58)] {
            _ = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(t)"}"#,
                            #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000\#(n)}","name":"bark.jpg","contentType":"image/jpeg","dataBase64":"AAECAwQ="}"#,
                            #"{"op":"finish"}"#)
        }
        let every = try log.eventCount()
        _ = try log.run(#"{"op":"delete","layer":"Trees","globalId":"\#(tree)"}"#)
        let head = try log.eventCount()
        let reference = try Self.reference(log, at: [every, head], tmp)
        _ = try log.createCheckpoints(every: every)
        let s = try log.historicState(at: head, file: tmp.path + ".deleted")
        defer { s.close() }
        #expect(try Self.overCheckpoint(s))
        #expect(try Self.rows(s) == reference[head]!.rows)
        #expect(try Self.answers(s) == reference[head]!.answers)
        #expect(reference[head]!.rows["p_attachments"]?.count == 2 && reference[head]!.rows["p_attachments"] != reference[every]!.rows["p_attachments"])
        #expect(try s.attachmentInfos(parents: [GlobalID.normalize(tree)!]).isEmpty)
    }

    /// This log's merge decisions after a checkpoint (a tree deleted here with its inspections, kept live by the other
    /// log's later edit), and a checkpoint made just after a decision, which applies to the event after it.
    @Test func mergeDecisionsAfterTheCheckpoint() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try MergeDevices.device("a", ta, seed: 1), b = try MergeDevices.device("b", tb, seed: 2)
        defer { ReplayExportTests.removeCheckpoints(a) }
        let (t, _) = try Fixture.treeWithInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        try MergeDevices.set(b, t, [("PlantedBy", "\"still here\"")], at: 30, actor: "bob", session: "bob-5")
        try MergeDevices.exchange(a, into: b)
        try MergeDevices.exchange(b, into: a)
        let head = try a.eventCount()
        let decided = try a.events().filter { $0.type == EventType.mergeDecided.rawValue }.map(\.position)
        try #require(!decided.isEmpty)
        // A few of them (the import decides about every baseline feature both logs hold): the first, one in the middle, the last.
        let some = [decided[0], decided[decided.count / 2], decided[decided.count - 1]]
        let positions = Array(Set(some.flatMap { [$0, $0 + 1, $0 + 2] }.filter { $0 <= head } + [head])).sorted()
        let reference = try Self.reference(a, at: positions, ta)
        for d in Set([some[0] - 1] + some).sorted() {
            ReplayExportTests.removeCheckpoints(a)
            _ = try a.createCheckpoints(every: d)
            for p in positions where p >= d && p < min(2 * d, d + 3) || p == head && head < 2 * d {
                let s = try a.historicState(at: p, file: ta.path + ".overlay-\(d)-\(p)")
                defer { s.close() }
                #expect(try Self.overCheckpoint(s))
                #expect(try Self.rows(s) == reference[p]!.rows, "\(p) over the checkpoint at \(d)")
                #expect(try Self.answers(s) == reference[p]!.answers, "\(p) over the checkpoint at \(d)")
            }
        }
    }

    /// A schema change between the checkpoint and the moment may reshape tables: that state is replayed from a copy
    /// of the checkpoint (as before), and a checkpoint made after the change is read in place again.
    @Test func aSchemaChangeAfterTheCheckpointIsFollowed() throws {
        let tmp = TempPath()
        let log = try ReplayExportTests.randomLog(at: tmp.path, seed: 9, steps: 80)
        defer { ReplayExportTests.removeCheckpoints(log) }
        let every = try log.eventCount()
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        _ = try log.changeSchema(service: s.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "test")
        let tree = try Fixture.globalIds("Trees")[40]
        _ = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Notes","value":"after the change"}"#, #"{"op":"finish"}"#)
        let head = try log.eventCount()
        let reference = try Self.reference(log, at: [every, head], tmp)
        _ = try log.createCheckpoints(every: every)
        let after = try log.historicState(at: head, file: tmp.path + ".after")
        defer { after.close() }
        #expect(try !Self.overCheckpoint(after))
        #expect(try Self.rows(after) == reference[head]!.rows)
        #expect(try Self.answers(after) == reference[head]!.answers)
        #expect(try after.queryFeatures(layer: "Trees", FeatureQuery(predicate: .compare(.field("Notes"), .equal, .value("after the change")))).features.count == 1)
        let at = try log.historicState(at: every, file: tmp.path + ".at")
        defer { at.close() }
        #expect(try Self.overCheckpoint(at))
        #expect(try Self.answers(at) == reference[every]!.answers)
        // A checkpoint after the change: the state after it is read over it.
        _ = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Notes","value":"later"}"#, #"{"op":"finish"}"#)
        let later = try log.eventCount()
        ReplayExportTests.removeCheckpoints(log)
        let laterReference = try Self.reference(log, at: [later], tmp)
        _ = try log.createCheckpoints(every: head)
        let overNew = try log.historicState(at: later, file: tmp.path + ".later")
        defer { overNew.close() }
        #expect(try Self.overCheckpoint(overNew))
        #expect(try Self.rows(overNew) == laterReference[later]!.rows)
        #expect(try Self.answers(overNew) == laterReference[later]!.answers)
    }

    /// A checkpoint written after its fingerprint is not read in place, even with its modification time set back
    /// (as `touch -r` would): the copy checks its bytes, finds them changed and replays from the one before (here,
    /// from the first event).
    @Test(arguments: [false, true])
    func aCheckpointChangedSinceItsFingerprintIsNotReadInPlace(timeSetBack: Bool) throws {
        let tmp = TempPath()
        let log = try ReplayExportTests.randomLog(at: tmp.path, seed: 5, steps: 80)
        defer { ReplayExportTests.removeCheckpoints(log) }
        let head = try log.eventCount()
        let every = head / 2
        let reference = try Self.reference(log, at: [every + 1], tmp)
        _ = try log.createCheckpoints(every: every)
        let first = try log.checkpoints()[0]
        let written = try FileManager.default.attributesOfItem(atPath: first.path)[.modificationDate] as! Date
        // Untouched, it is read in place.
        let before = try log.historicState(at: every + 1, file: tmp.path + ".unchanged")
        #expect(try Self.overCheckpoint(before))
        before.close()
        try RawLog.write(first.path) { db in try db.execute(sql: "UPDATE p_layer_0 SET DBH = 1234.5 WHERE _oid = 3") }
        if timeSetBack { try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: first.path) }
        let s = try log.historicState(at: every + 1, file: tmp.path + ".changed")
        defer { s.close() }
        #expect(try !Self.overCheckpoint(s))
        #expect(try Self.rows(s) == reference[every + 1]!.rows)
    }
}

extension HistoricStateTests {
    /// A moment's position found through the index equals the scan over every event (`position(atMilliseconds:by:)`),
    /// with client times out of order (edits made offline), and after events appended with earlier times.
    @Test(arguments: [EventClock.client, .recorded])
    func aMomentIndexFindsThePositionsTheScanFinds(clock: EventClock) throws {
        let tmp = TempPath()
        let log = try ReplayExportTests.randomLog(at: tmp.path, seed: 11, steps: 60)
        let trees = try Fixture.globalIds("Trees")
        func offline(_ tree: String, _ at: String) throws {
            _ = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","at":"\#(at)"}"#, #"{"op":"set","field":"PlantedBy","value":"offline","at":"\#(at)"}"#,
                            #"{"op":"finish","at":"\#(at)"}"#)
        }
        try offline(trees[50], "2020-03-01T00:00:00Z")
        var index = MomentIndex(clock: clock, size: 4)
        func expectSame() throws {
            try log.catchUp(&index)
            #expect(index.start.flatMap(Timestamp.parse) == (try log.startMilliseconds(by: clock)))
            var moments: Set<Int64> = []
            for e in try log.events() {
                let ms = try #require(Timestamp.parse(clock.time(of: e)))
                moments.formUnion([ms - 1, ms, ms + 1])
            }
            for ms in moments.sorted() {
                #expect(try log.position(atMilliseconds: ms, in: &index) == (try log.position(atMilliseconds: ms, by: clock)), "\(ms)")
            }
        }
        try expectSame()
        try offline(trees[51], "2019-01-01T00:00:00Z")
        try offline(trees[52], "2030-01-01T00:00:00Z")
        try expectSame()
    }
}
