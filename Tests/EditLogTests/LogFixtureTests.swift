import Crypto
import EditLog
import EditLogCore
import Foundation
import Testing

/// Logs written by the binary of `2608d08` (Fixtures/logs/README.md says how), with the digests that binary gave
/// them. Every later build must verify them, keep their projections and rebuild, replay and read them (history,
/// blame, diff, sessions, conflicts, the report's figures) to exactly these digests: a change to how events are
/// decoded, folded or written must not change what a log already recorded says.
@Suite struct LogFixtureTests {
    struct Expected {
        var file: String
        var headHash: String
        var projections: String
        var content: String
        var replayMiddle: String
        var readers: String
    }

    static let fixtures: [Expected] = [
        Expected(file: "demo-day.editlog", headHash: "ee67a0630da76992fe966282251ddd7c7d868b88399bab3c082c6f05846c16c8",
                 
                 projections: "87f0aa61172cd60510fa6fe91da58bdcc2600ed3e0d61107c25c6f563316da12",
                 content: "0974eb3f2abcfbfbe3bd496e751b7ce89ca46b4386b5ed350fb2739bd2b6f408",
                 replayMiddle: "6cc3bdb1fb8e5f34d8bf248f53f8f489d5e78bcb5cad442cfde71732efac7124",
                 readers: "b0aa68f0be742ffa25a84d82e3511ab19285efeda4a897a3618c323a38815dcc"),
        Expected(file: "merged-device.editlog", headHash: "77ab30f9f74a1840a36ab96dd732258958c2faf5ed7002281f165964ce23ffe5",
                 
                 projections: "c62a4bd16ab85b0e3896f9887a3c18a40d964e9d84c93b0b8a76fc9213d6e1e2",
                 content: "ee3e018c02f9664a4e14be17cf603b9b9feeb4cf78c8863279d0da493c4ba317",
                 replayMiddle: "ffe47d868edebd3d64d2497e9cc60c4ee56ade474f8e4c4a7c6517179cb8af38",
                 readers: "841de76034af2a5d0863407f21682bc6d7f379e516ca2e91ed71ebbe8d66def1"),
        Expected(file: "synced-device.editlog", headHash: "221b41166ec3d1a7f27ab38ff9e6b174ff6ac90d429d438f76f7fcaa32bdfbff",
                 
                 projections: "e19d497a5ac8068c79c37e78251af2850c0e5978cb704c677cc08a4fef5fd0f2",
                 content: "b9d239d9c329a7fcfdb94ac1a979cafe8ac6f91c6fe864bd5256f18dadb1627a",
                 replayMiddle: "3afc7c39eeef28aa8439cb47099f48ecc32ae254a8b4310057e5e90dd360ce0d",
                 readers: "49fcec8ac4d520bd86b5b89461c67fb7ac9e6c2a746cfc57e36f038456310388"),
    ]

    /// A private copy of a fixture (tests never write to the committed file).
    static func copy(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "/editlog-fixture-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let out = dir + "/" + name
        try FileManager.default.copyItem(atPath: Paths.root + "/Fixtures/logs/" + name, toPath: out)
        return out
    }

    /// One digest over what every reader of events says about the log.
    static func readersDigest(_ log: EditLog) throws -> String {
        var parts: [JSONValue] = []
        let head = try log.lastPosition()
        // Feature streams with more than their first event: the ones a merge, a session or a delete touched.
        var streams: [String: Int] = [:]
        try log.events(LogFilter()) { e in
            if StreamName.parseFeature(e.stream) != nil { streams[e.stream, default: 0] += 1 }
        }
        for stream in streams.keys.sorted() where streams[stream]! > 1 {
            let g = StreamName.parseFeature(stream)!.globalId
            // A feature only a canceled session meant to create has a stream but no row: no history to read.
            guard let h = try? log.history(globalId: g) else { parts.append(.string("absent \(g)")); continue }
            parts.append(.array(h.entries.map(\.json)))
            parts.append(try log.blame(globalId: g).json)
        }
        for (a, b) in [(0, head / 2), (head / 2, head), (0, head)] {
            parts.append(try log.diff(from: .position(a), to: .position(b)).json)
        }
        parts.append(.array(try log.sessions().map(\.json)))
        parts.append(.array(try log.conflicts().map(\.json)))
        // From position 0, as the report's default window was when these digests were taken (it now starts after the baseline).
        let r = try log.report(from: .position(0))
        func counts(_ d: [String: Int]) -> JSONValue { .object(d.mapValues { .int(Int64($0)) }) }
        parts.append(.object(["layer": counts(r.byLayer), "actor": counts(r.byActor), "cause": counts(r.byCause),
                              "derived": .int(Int64(r.derived.count)), "discarded": .int(Int64(r.discarded.count)),
                              "conflicts": .array(r.conflicts.map { .object(["conflict": $0.conflict.json, "position": .int($0.position)]) }),
                              "days": .object(r.sessionsByActorDay.mapValues(counts))]))
        return Hex.encode(Array(SHA256.hash(data: JSONValue.array(parts).serializedBytes())))
    }

    @Test(arguments: fixtures)
    func verifiesRebuildsAndReadsAsWhenWritten(_ x: Expected) throws {
        let path = try Self.copy(x.file)
        let log = try EditLog.open(at: path)
        defer { log.close() }
        let report = try log.verify()
        #expect(report.ok, "\(x.file): \(report.problems)")
        #expect(report.headHash == x.headHash)
        let stored = try log.digestOfProjections()
        let content = try log.digestOfContent()
        let middle = try log.replayDigest(asOf: .position(try log.lastPosition() / 2)).digest
        let readers = try Self.readersDigest(log)
        let seen = "projections: \"\(stored)\", content: \"\(content)\", replayMiddle: \"\(middle ?? "")\", readers: \"\(readers)\""
        #expect(stored == x.projections, "\(x.file): the projections as written; now \(seen)")
        #expect(try log.digestOfRebuild() == stored, "\(x.file): a rebuild in memory")
        #expect(content == x.content, "\(x.file): the content")
        #expect(middle == x.replayMiddle, "\(x.file): replay to the middle")
        #expect(readers == x.readers, "\(x.file): history, blame, diff, sessions, conflicts, report; now \(seen)")
        try log.rebuild()
        #expect(try log.digestOfProjections() == x.projections, "\(x.file): the projections rebuilt in place")
        #expect(try log.verify().ok)
    }
}

extension LogFixtureTests.Expected: CustomTestStringConvertible {
    var testDescription: String { file }
}
