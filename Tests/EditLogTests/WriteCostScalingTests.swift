@testable import EditLog
import EditLogCore
@testable import EditLogStore
import GRDB
import Foundation
import Testing

/// A write transaction's cost must not grow with the log's streams. Timing shows that only at full size (the bench's
/// `append-session`), so this counts the work instead: the stream-version entries copied on write
/// (`EventStore.streamVersionsCopied`) while recording the same sessions on a log with S streams and on one with 10×S.
@Suite struct WriteCostScalingTests {
    /// A log with `trees` new trees (each a feature stream and a session stream this process has written), then
    /// `sessions` one-session `record` calls editing the first trees: the entries copied per recorded session.
    func copiedPerSession(trees: Int, sessions: Int) throws -> Double {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        var lines: [String] = []
        for i in 0..<trees {
            lines.append(#"{"op": "create", "at": "2026-05-04T16:00:00Z", "session": "grow-\#(i)", "layer": "Trees", "globalId": "\#(newGID(i))", "geometry": {"x": -122.6, "y": 45.5, "spatialReference": {"wkid": 4326}}, "attributes": {"Condition": "Good"}}"#)
            lines.append(#"{"op": "finish", "at": "2026-05-04T16:00:01Z"}"#)
        }
        _ = try log.record(try script(lines), name: "grow", sha256: InputFiles.sha256(Array(lines.joined(separator: "\n").utf8)))
        let before = log.store.streamVersionsCopied
        for s in 0..<sessions {
            try log.run(#"{"op": "edit", "at": "2026-05-05T16:00:00Z", "session": "edit-\#(s)", "layer": "Trees", "globalId": "\#(newGID(s % trees))"}"#,
                        #"{"op": "set", "at": "2026-05-05T16:00:01Z", "field": "Condition", "value": "Fair"}"#,
                        #"{"op": "finish", "at": "2026-05-05T16:00:02Z"}"#)
        }
        return Double(log.store.streamVersionsCopied - before) / Double(sessions)
    }

    @Test func recordingASessionCopiesNoMoreOnALogWithTenTimesTheStreams() throws {
        let small = try copiedPerSession(trees: 40, sessions: 20)
        let large = try copiedPerSession(trees: 400, sessions: 20)
        // A transaction that copied the cached versions would copy about 2 entries per tree here (its feature's stream
        // and its session's): 80 on the small log, 800 on the large one.
        #expect(large <= small * 1.1 + 1, "entries copied per session: \(small) with 80 streams, \(large) with 800")
    }

    /// A stream's events are read along its index, in position order, with no sort: sorted by position, SQLite held
    /// every selected row of the stream in memory first (a sync run read `$sync`, which lists every change ever
    /// pulled, so). Checked on a stream whose events are interleaved with another's.
    @Test func aStreamIsReadAlongItsIndexInPositionOrderWithoutASort() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let ids = try Fixture.globalIds("Trees")
        for i in 0..<6 {
            try log.run(#"{"op": "edit", "at": "2026-05-05T16:00:0\#(i)Z", "session": "s\#(i)", "layer": "Trees", "globalId": "\#(ids[i % 2])"}"#,
                        #"{"op": "set", "at": "2026-05-05T16:00:0\#(i)Z", "field": "Condition", "value": "\#(i % 3 == 0 ? "Fair" : "Good")"}"#,
                        #"{"op": "finish", "at": "2026-05-05T16:00:0\#(i)Z"}"#)
        }
        let stream = StreamName.feature(layer: 0, globalId: ids[0])
        let all = try log.events()
        let expected = all.filter { $0.stream == stream }.map(\.position)
        #expect(expected.count > 3)
        #expect(try log.streamEvents(stream).map(\.position) == expected)
        let after = expected[1]
        var read: [Int64] = []
        try log.forEachStreamEvent(stream, types: [.sessionCommitted]) { read.append($0.position) }
        #expect(read == all.filter { $0.stream == stream && $0.type == EventType.sessionCommitted.rawValue }.map(\.position))
        read = []
        try RawLog.read(tmp.path) { db in
            try EventReading.forEach(db, inStream: stream, after: after) { read.append($0.position) }
            for clause in [nil, "type IN (?, ?)"] {
                let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + EventReading.inStreamSQL(clause),
                                            arguments: StatementArguments([stream, 0] + (clause == nil ? [] : ["A", "B"]))).map { $0["detail"] as String }
                #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
            }
        }
        #expect(read == expected.filter { $0 > after })
    }

    /// The end of the baseline (every report and sync reads it) is a lookup in the partial index `events_baseline`, not
    /// a scan of the log, and gives what a scan gives.
    @Test func theBaselinesEndIsAnIndexLookup() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        try log.run(#"{"op": "edit", "at": "2026-05-05T16:00:00Z", "session": "after", "layer": "Trees", "globalId": "\#(try Fixture.globalIds("Trees")[0])"}"#,
                    #"{"op": "finish", "at": "2026-05-05T16:00:02Z"}"#)
        log.close()
        try RawLog.read(tmp.path) { db in
            let scanned = try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM events NOT INDEXED WHERE type IN ('SchemaDefined', 'FeatureBaselined')")
            #expect(try EventReading.baselineEnd(db) == scanned)
            #expect(try EventReading.baselineEnd(db) < EventReading.count(db))
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT MAX(position) FROM events WHERE \(EventReading.baselineTerm)").map { $0["detail"] as String }
            #expect(plan.contains { $0.contains("events_baseline") }, "\(plan)")
        }
    }
}
