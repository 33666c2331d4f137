import EditLog
@testable import EditLogProjections
import Foundation
import GRDB
import Testing

/// The change index (`ChangeIndex`): `diff` reads each changed feature's editor tracking at its window's start from it
/// instead of folding the feature's stream. Both ways must give the same diff, the index must equal a rebuild's, and a
/// log made before the index keeps working without one.
@Suite struct ChangeIndexTests {
    /// A copy of the log at `path` without the change index: its diff folds the streams (`Audit.fieldValues`).
    static func copyWithoutIndex(_ path: String, to copy: String) throws -> EditLog {
        try RawLog.writeWithoutTransaction(path) { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copy]) }
        try RawLog.write(copy) { db in try db.execute(sql: "DROP TABLE change_index") }
        return try EditLog.open(at: copy)
    }

    static func hasIndex(_ path: String) throws -> Bool {
        try RawLog.read(path) { db in try db.tableExists("change_index") }
    }

    /// An index row's tracking is written straight to bytes: the bytes the JSON object of the same members gives
    /// (keys in byte order), for random rows and random sets of written columns, so indexes made before it still
    /// equal a rebuild's. The layer's fields are given in reverse, so its tracking names are out of byte order.
    @Test(arguments: [UInt64(1), 2, 3])
    func trackingBytesAreTheJSONObjectsBytes(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        defer { log.close() }
        var layer = try #require(log.schema.layer(id: 0))
        layer.fields = layer.fields.reversed()  // Editor, EditDate, Creator, CreationDate: against their byte order
        let c = LayerColumns(layer)
        #expect(c.tracking.map(\.name) == ["CreationDate", "Creator", "EditDate", "Editor"])
        var rng = SplitMix64(seed: seed)
        for _ in 0..<500 {
            var row = [DatabaseValue?](repeating: nil, count: c.names.count)
            for (_, i) in c.tracking {
                switch rng.next() % 6 {
                case 0: row[i] = nil
                case 1: row[i] = .null
                case 2: row[i] = Int64(bitPattern: rng.next()).databaseValue
                case 3: row[i] = (Double(rng.next() % 100_000) / 7).databaseValue
                case 4: row[i] = "user \"\(rng.next() % 1000)\"\u{e9}".databaseValue
                default: row[i] = Data([1, 2]).databaseValue
                }
            }
            let only: [Int]? = rng.next() % 3 == 0 ? nil : c.tracking.map(\.index).filter { _ in rng.next() % 2 == 0 }
            var o: [String: JSONValue] = [:]
            for (name, i) in c.tracking where only?.contains(i) ?? true {
                guard let v = row[i] else { continue }
                switch v.storage {
                case .null: o[name] = .null
                case .int64(let x): o[name] = .int(x)
                case .double(let x): o[name] = .double(x)
                case .string(let s): o[name] = .string(s)
                case .blob: continue
                }
            }
            let expected = o.isEmpty || only?.isEmpty == true ? nil : JSONValue.object(o).serialized()
            #expect(ChangeIndex.tracking(c, row, only: only) == expected)
        }
    }

    @Test(arguments: [UInt64(11), 12, 13])
    func diffFromTheIndexEqualsDiffFromTheStreams(seed: UInt64) throws {
        let tmp = TempPath(), plain = TempPath()
        let log = try RebuildPropertyTests.randomLog(at: tmp.path, seed: seed, steps: 240)
        #expect(try Self.hasIndex(tmp.path))
        let folded = try Self.copyWithoutIndex(tmp.path, to: plain.path)
        let end = try log.eventCount()
        var rng = SplitMix64(seed: seed &* 7919)
        var trackingSeen = 0
        for _ in 0..<24 {
            let a = Int64(rng.next() % UInt64(end)), b = Int64(rng.next() % UInt64(end))
            let (from, to) = (min(a, b), max(a, b) + 1)
            let indexed = try log.diff(from: .position(from), to: .position(min(to, end)))
            let streams = try folded.diff(from: .position(from), to: .position(min(to, end)))
            #expect(indexed.json == streams.json, "window \(from)…\(to)")
            trackingSeen += indexed.changes.filter { c in c.kind == .updated && c.fields.contains { $0.field == "EditDate" && !$0.old.isNull } }.count
        }
        // The property says something only if windows started after features' tracking was set.
        #expect(trackingSeen > 10, "only \(trackingSeen) tracking changes with a known old value")
        // The incremental index equals a rebuild's (verify compares them), and a changed row is caught.
        #expect(try log.verify().ok)
        try RawLog.write(tmp.path) { db in
            try db.execute(sql: "UPDATE change_index SET tracking = '{\"Editor\":\"mallory\"}' WHERE position = (SELECT MAX(position) FROM change_index)")
        }
        let r = try log.verify()
        #expect(!r.ok && r.problems.contains { $0.contains("change index") })
    }

    /// `extractChanges`' window from the index agrees with `diff`: every feature diff names, with the same kind; beyond
    /// them only updates of features written in the window whose values came back to what they were (diff leaves those
    /// out; the index sees the row written).
    @Test(arguments: [UInt64(21), 22])
    func theIndexsChangesAgreeWithDiff(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try RebuildPropertyTests.randomLog(at: tmp.path, seed: seed, steps: 300)
        let end = try log.eventCount()
        var rng = SplitMix64(seed: seed &* 31)
        var kinds: [ChangeIndex.Change: Int] = [:]
        for _ in 0..<30 {
            let a = Int64(rng.next() % UInt64(end)), b = Int64(rng.next() % UInt64(end))
            let (from, to) = (min(a, b), max(a, b) + 1)
            for layer in log.schema.layers {
                let indexed = try #require(try log.changedFeatures(layer: String(layer.id), after: from, upTo: min(to, end)))
                let byId = Dictionary(indexed.map { ($0.globalId, $0.change) }, uniquingKeysWith: { a, _ in a })
                #expect(byId.count == indexed.count, "a feature listed twice")
                let diff = try log.diff(from: .position(from), to: .position(min(to, end)), layer: String(layer.id)).changes
                for c in diff {
                    #expect(byId[c.globalId]?.rawValue == c.kind.rawValue, "\(layer.name) \(c.globalId) \(from)…\(to): diff \(c.kind), index \(String(describing: byId[c.globalId]))")
                }
                let named = Set(diff.map(\.globalId))
                for (g, change) in indexed where !named.contains(g) {
                    #expect(change == .updated, "\(g) \(from)…\(to): \(change) in the index only")
                }
                for (_, c) in indexed { kinds[c, default: 0] += 1 }
            }
        }
        #expect((kinds[.added] ?? 0) > 5 && (kinds[.updated] ?? 0) > 5 && (kinds[.deleted] ?? 0) > 0, "\(kinds)")
    }

    /// A log made before the index: writes leave it absent (half an index would answer wrongly), diff folds the
    /// streams, verify passes, and `rebuild` makes the index, equal to one kept from the start.
    @Test func aLogWithoutTheIndexGetsOneFromRebuild() throws {
        let tmp = TempPath(), kept = TempPath()
        /// A log of the fixture and 120 random steps, closed after its creation and opened again (with the same clock
        /// and ids both times), its index dropped in between when `dropped`.
        func make(_ path: String, dropped: Bool) throws -> EditLog {
            try Fixture.treesLog(at: path, seed: 5).close()
            if dropped { try RawLog.write(path) { db in try db.execute(sql: "DROP TABLE change_index") } }
            let clock = StepClock(start: 1_790_000_000_000, step: 7)
            let log = try EditLog.open(at: path, clock: clock, ids: UUIDv7Generator(clock: clock, seed: 5))
            try RebuildPropertyTests.drive(log, seed: 5, steps: 120)
            return log
        }
        let old = try make(tmp.path, dropped: true)
        #expect(try !Self.hasIndex(tmp.path))
        #expect(try old.verify().ok)
        let end = try old.eventCount()
        let before = try old.diff(from: .position(end / 2), to: .position(end))
        #expect(!before.changes.isEmpty)
        try old.rebuild()
        #expect(try Self.hasIndex(tmp.path))
        #expect(try old.verify().ok)
        #expect(try old.diff(from: .position(end / 2), to: .position(end)).json == before.json)
        // The same events kept with an index from the start give the same rows.
        _ = try make(kept.path, dropped: false)
        func rows(_ path: String) throws -> [[String]] {
            try RawLog.read(path) { db in
                try Row.fetchAll(db, sql: "SELECT position, layer, global_id, kind, coalesce(tracking, '') FROM change_index ORDER BY position").map {
                    ["\($0[0] as Int64)", "\($0[1] as Int64)", $0[2], "\($0[3] as Int64)", $0[4]]
                }
            }
        }
        #expect(try rows(tmp.path) == rows(kept.path))
        #expect(try rows(tmp.path).count > 100)
    }
}
