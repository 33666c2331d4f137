import EditLog
import Foundation
import Testing

/// Property: for any sequence of sessions (valid or rejected steps, several actors, interleaved),
/// the incrementally maintained projections equal a rebuild from scratch, byte for byte.
@Suite struct RebuildPropertyTests {
    struct RandomEditor {
        var rng: SplitMix64
        let trees: [String]
        let species: [String]
        var created: [String] = []
        var inspections: [String] = []
        var attachments: [String] = []
        var n = 1000

        mutating func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        mutating func chance(_ p: Double) -> Bool { Double(rng.next() % 10_000) / 10_000 < p }
        mutating func fresh() -> String { n += 1; return newGID(n) }

        mutating func line(actor: String) -> String {
            let session = "\"session\":\"\(actor)\""
            switch rng.next() % 14 {
            case 0:
                let g = fresh(); created.append(g)
                let x = -122.66 + Double(rng.next() % 1000) / 10_000, y = 45.495 + Double(rng.next() % 500) / 10_000
                return #"{"op":"create","layer":"Trees","globalId":"\#(g)","geometry":{"x":\#(x),"y":\#(y)},"attributes":{"DBH":\#(Double(rng.next() % 400) / 2)}}"#
            case 1, 2:
                return #"{"op":"edit","layer":"Trees","globalId":"\#(pick(trees + created))"}"#
            case 3, 4, 5:
                let (f, v): (String, String) = pick([("DBH", "\(Double(rng.next() % 2200) / 10)"), ("Condition", pick(["\"Good\"", "\"Fair\"", "\"Poor\"", "\"Dead\"", "\"Bad\""])),
                                                     ("SiteWidth", "\(Int(rng.next() % 60))"), ("PlantedBy", "\"crew \(rng.next() % 9)\""), ("Wires", "\(rng.next() % 4)"),
                                                     ("CollectedDate", "\"2026-0\(1 + rng.next() % 9)-1\(rng.next() % 9)T00:00:00Z\""), ("Notes", "\"n\(rng.next() % 50)\"")])
                return #"{"op":"set","field":"\#(f)","value":\#(v),\#(session)}"#
            case 6:
                return #"{"op":"relate","relationship":"Species_Trees","globalId":"\#(chance(0.9) ? pick(species) : fresh())",\#(session)}"#
            case 7:
                let a = fresh(); attachments.append(a)
                return #"{"op":"attach","attachmentId":"\#(a)","name":"p\#(rng.next() % 99).jpg","contentType":"image/jpeg","dataBase64":"\#(Data((0..<Int(rng.next() % 40 + 1)).map { _ in UInt8(rng.next() % 256) }).base64EncodedString())",\#(session)}"#
            case 8:
                guard !attachments.isEmpty else { return #"{"op":"finish",\#(session)}"# }
                return chance(0.5) ? #"{"op":"detach","attachmentId":"\#(pick(attachments))",\#(session)}"# : #"{"op":"renameAttachment","attachmentId":"\#(pick(attachments))","name":"r\#(rng.next() % 9).jpg",\#(session)}"#
            case 9:
                let g = fresh(); inspections.append(g)
                return #"{"op":"create","layer":"Inspections","globalId":"\#(g)","parent":{"relationship":"Tree_Inspections","globalId":"\#(pick(trees + created))"},"attributes":{"Condition":"Fair","CollectedDate":"2026-0\#(1 + rng.next() % 9)-01T00:00:00Z","DBH":\#(rng.next() % 200)}}"#
            case 10:
                guard !inspections.isEmpty else { return #"{"op":"cancel",\#(session)}"# }
                return chance(0.5) ? #"{"op":"edit","layer":"Inspections","globalId":"\#(pick(inspections))"}"# : #"{"op":"delete","layer":"Inspections","globalId":"\#(pick(inspections))"}"#
            case 11:
                return chance(0.2) ? #"{"op":"delete","layer":"Trees","globalId":"\#(pick(trees + created))"}"# : #"{"op":"cancel",\#(session)}"#
            default:
                return chance(0.1) ? #"{"op":"abandon",\#(session)}"# : #"{"op":"finish",\#(session)}"#
            }
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func rebuildEqualsIncremental(seed: UInt64) throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, seed: seed)
        let (accepted, rejected) = try Self.drive(log, seed: seed, steps: 240)
        #expect(accepted > 60 && rejected > 10, "accepted \(accepted), rejected \(rejected): the generator should exercise both paths")
        let incremental = try log.digestOfProjections()
        #expect(incremental == (try log.digestOfRebuild()))
        try log.rebuild()
        #expect(try log.digestOfProjections() == incremental)
        #expect(try log.verify().ok)
    }

    @Test func theDigestSeesAOneValueDifference() throws {
        // The property above is only as strong as the digest: a single changed cell must change it.
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let d = try log.digestOfProjections()
        try RawLog.write(log.path) { db in try db.execute(sql: "UPDATE p_layer_0 SET DBH = DBH + 0.5 WHERE _oid = 7") }
        #expect(try log.digestOfProjections() != d)
        #expect(try log.digestOfRebuild() == d)
        let r = try log.verify()
        #expect(!r.ok && r.problems.first?.contains("p_layer_0") == true)
    }

    /// The fixture log at `path` after `steps` random pop-up steps of `seed` (`drive`).
    static func randomLog(at path: String, seed: UInt64, steps: Int) throws -> EditLog {
        let log = try Fixture.treesLog(at: path, seed: seed)
        try drive(log, seed: seed, steps: steps)
        return log
    }

    /// `drive` with the editor of `seed` over the fixture's first 30 trees.
    @discardableResult
    static func drive(_ log: EditLog, seed: UInt64, steps: Int) throws -> (accepted: Int, rejected: Int) {
        var editor = RandomEditor(rng: SplitMix64(seed: seed), trees: Array(try Fixture.globalIds("Trees").prefix(30)), species: try Fixture.globalIds("Species"))
        return try drive(log, editor: &editor, steps: steps)
    }

    /// Feeds `steps` random pop-up steps to `log`, each actor in its own session (create/edit name a new one,
    /// the other steps use it); returns how many were accepted and rejected.
    static func drive(_ log: EditLog, editor: inout RandomEditor, steps: Int, sessionPrefix: String = "") throws -> (accepted: Int, rejected: Int) {
        let actors = ["ann", "bob", "cy"]
        var accepted = 0, rejected = 0
        var current: [String: String] = [:]
        for step in 0..<steps {
            let actor = actors[step % actors.count]
            var text = editor.line(actor: actor)
            var opened: String?
            if text.contains("\"op\":\"create\"") || text.contains("\"op\":\"edit\"") {
                opened = "\(sessionPrefix)\(actor)-\(step)"
                text = String(text.dropLast()) + ",\"session\":\"\(opened!)\"}"
            }
            let marker = "\"session\":\"\(actor)\""
            if let s = current[actor] { text = text.replacingOccurrences(of: marker, with: "\"session\":\"\(s)\"") }
            else { text = text.replacingOccurrences(of: marker, with: "\"actor\":\"\(actor)\"").replacingOccurrences(of: "\"op\":\"abandon\"", with: "\"op\":\"cancel\"") }
            let cmds = try ScriptParser.parse(Array(text.utf8), defaultActor: actor)
            do {
                _ = try log.apply(cmds[0])
                accepted += 1
                if let opened { current[actor] = opened }
                if ["finish", "cancel", "abandon"].contains(cmds[0].op.name) { current[actor] = nil }
            } catch { rejected += 1 }
        }
        return (accepted, rejected)
    }
}
