import EditLog
import EditLogProjections
import EditLogStore
import Foundation
import GRDB
import Testing

/// The projection rows of a replay are written on a second thread when the events come from another connection
/// (`Projector.writingAside`). These tests hold that path to what one connection writes, batch size by batch size,
/// and to its failures.
@Suite struct RowWriterTests {
    /// Replays `source` into an empty in-memory database with `pendingLimit`, with or without the row writer.
    static func replay(_ source: Database, pendingLimit: Int, aside: Bool, target: DatabaseQueue = try! DatabaseQueue()) throws -> String {
        try target.write { t in
            let projector = Projector(logId: try EventStore.logId(in: source))
            projector.pendingLimit = pendingLimit
            let run = {
                try EventReading.forEach(source) { try projector.apply($0, t) }
                try projector.flush(t)
            }
            if aside { try projector.writingAside(to: t, readingFrom: source, run) } else { try run() }
            return try Projections.digest(t).digest
        }
    }

    @Test(arguments: [UInt64(5), 6])
    func theRowWriterWritesWhatOneConnectionWrites(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try RebuildPropertyTests.randomLog(at: tmp.path, seed: seed, steps: 240)
        let incremental = try log.digestOfProjections()
        try RawLog.read(log.path) { (source: Database) throws -> Void in
            // Batches of one row, of a few rows (a feature folded across batches is an UPDATE), and one batch.
            for limit in [1, 7, 10_000] {
                #expect(try Self.replay(source, pendingLimit: limit, aside: true) == incremental, "pending limit \(limit)")
                #expect(try Self.replay(source, pendingLimit: limit, aside: false) == incremental, "pending limit \(limit)")
            }
        }
        // The facade's rebuild reads the events on a second connection: same projections.
        try log.rebuild()
        #expect(try log.digestOfProjections() == incremental)
    }

    @Test func aWriteThatFailsOnTheWritersThreadIsThrownAndStopsTheReplay() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        try RebuildPropertyTests.drive(log, seed: 9, steps: 120)
        let target = try DatabaseQueue()
        // The target's session table refuses its 20th row: the writer's thread fails part-way through the replay.
        try target.write { db in
            try ProjectionTables.createCommon(db)
            try db.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON p_sessions WHEN (SELECT count(*) FROM p_sessions) >= 19
                BEGIN SELECT RAISE(ABORT, 'the twentieth session row is refused'); END
                """)
        }
        try RawLog.read(log.path) { (source: Database) throws -> Void in
            for limit in [1, 5] {
                do {
                    _ = try Self.replay(source, pendingLimit: limit, aside: true, target: target)
                    Issue.record("pending limit \(limit): the replay went through a refused row")
                } catch {
                    #expect("\(error)".contains("the twentieth session row is refused"), "\(error)")
                }
                // The failed replay's transaction rolled back: the target is as it was.
                #expect(try target.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM p_sessions") } == 0)
            }
        }
    }
}
