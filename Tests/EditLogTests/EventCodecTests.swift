import EditLog
import Foundation
import GRDB
import Testing

/// One codec per event type: every stored payload is read into its type's body, and the body writes exactly the bytes
/// stored (which the JSON-tree writers of earlier builds wrote), so hashes and fixtures stay as they were.
@Suite struct EventCodecTests {
    /// Reads every event of the log at `path` from its rows and checks that its body writes its stored payload bytes.
    /// Returns the types seen.
    @discardableResult
    static func expectEveryPayloadIsItsBodysBytes(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Set<EventType> {
        var seen: Set<EventType> = []
        var mismatches: [String] = []
        try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }()).read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT position, type, payload FROM events ORDER BY position")
            while let row = try rows.next() {
                let position: Int64 = row[0], type: String = row[1]
                let stored: [UInt8] = Array((row[2] as String).utf8)
                let body = try EventBody(type: type, payload: try JSONParser.parse(stored), position: position)
                let t = try #require(EventType(rawValue: type), "position \(position): unknown type \(type)", sourceLocation: sourceLocation)
                seen.insert(t)
                if body.typeName != type || body.canonicalBytes != stored, mismatches.count < 5 {
                    mismatches.append("position \(position) \(type):\n  stored  \(String(decoding: stored, as: UTF8.self).prefix(400))\n  written \(String(decoding: body.canonicalBytes, as: UTF8.self).prefix(400))")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(path): bodies that do not write their stored bytes:\n\(mismatches.joined(separator: "\n"))", sourceLocation: sourceLocation)
        return seen
    }

    @Test func theFixtureLogsPayloadsAreTheirBodiesBytes() throws {
        var seen: Set<EventType> = []
        for f in LogFixtureTests.fixtures { seen.formUnion(try Self.expectEveryPayloadIsItsBodysBytes(try LogFixtureTests.copy(f.file))) }
        // The fixtures hold every type but the schema changes and `serve`'s replica records, which the schema-change and
        // replica tests check the same way.
        let elsewhere: Set<EventType> = [.schemaChanged, .replicaCreated, .replicaSynchronized, .replicaUnregistered]
        #expect(Set(EventType.allCases).subtracting(seen) == elsewhere)
    }

    @Test func aSchemaChangeIsWrittenByItsBody() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        var s = try ServiceEdits.trees()
        s.addString("Trees", "Notes")
        let update = try log.changeSchema(service: s.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "test")
        let position = try #require(update.position)
        let e = try #require(try log.events(after: position - 1).first)
        guard case .schemaChanged(let c) = try e.body else { Issue.record("\(e.type) is not a schema change"); return }
        #expect(c.changes.map(\.text) == update.changes.map(\.text) && c.source == "service.json")
        let seen = try Self.expectEveryPayloadIsItsBodysBytes(log.path)
        #expect(seen.contains(.schemaChanged))
    }

    /// What a writer gave is what a reader of the log gets: the body appended is read back equal, and the payload
    /// shown (`log --json`) is the body's.
    @Test func aBodyWrittenIsTheBodyReadBack() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let tree = try Fixture.globalIds("Trees")[0]
        let written = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Condition","value":"Poor"}"#, #"{"op":"finish"}"#)
        let commit = try #require(written.first { $0.type == EventType.sessionCommitted.rawValue })
        let read = try #require(try log.events(after: commit.position - 1).first)
        guard case .sessionCommitted(let w) = try commit.body, case .sessionCommitted(let r) = try read.body else {
            Issue.record("not commits: \(commit.type), \(read.type)"); return
        }
        #expect(w == r && w.changes["Condition"]?.new == "Poor")
        #expect(commit.payload == read.payload && commit.canonicalPayload == read.canonicalPayload && commit == read)
    }

    /// A stored payload its type cannot read is `.corrupt` at its position when a reader asks for the body, and every
    /// later ask gives the same error (it is read once).
    @Test func aBodyThatCannotBeReadNamesItsPosition() throws {
        let e = RecordedEvent(position: 42, id: UUID(), stream: "0:{X}", streamVersion: 1, type: EventType.sessionCommitted.rawValue,
                              payload: ["layer": 0], actor: "a", device: "d", session: "s", cause: "session", clientTime: nil,
                              recordedTime: "2026-01-01T00:00:00.000Z", origin: EventOrigin(logId: "l", position: 42, hash: []), hash: [])
        for _ in 0..<2 {
            do { _ = try e.body; Issue.record("read a commit without a globalId") } catch {
                #expect(error.kind == .corrupt && error.location == "position 42" && error.message.contains("globalId"), "\(error)")
            }
        }
    }
}
