@testable import EditLogBundle
import EditLog
import EditLogImport
import EditLogProjections
import Foundation
import GRDB
import Testing

/// Bundles carried between devices: imports are all or nothing, idempotent, merged, and refuse every bad bundle
/// leaving the log byte-identical.
@Suite struct BundleImportTests {
    let shared = SharedBundle.shared

    /// A copy of a one-chunk bundle of a log's own events with `edit` applied to its event lines (index, count,
    /// the line's object) and an honest chain again: every hash, origin hash, previous hash and the manifest's
    /// first and last hash computed anew (SHA256SUMS too, by `BundleFixture.pack`).
    static func rechained(_ path: String, to out: String, _ edit: (Int, Int, inout [String: JSONValue]) throws -> Void) throws {
        try BundleFixture.edit(path, to: out) { e in
            var lines = BundleFixture.lines(e[2].data)
            var previous: [UInt8]?
            var encoder = EventHash.Encoder()
            for i in lines.indices {
                var o = try BundleFixture.json(lines[i]).objectValue!
                try edit(i, lines.count, &o)
                if let previous { o["previousHash"] = .string(Hex.encode(previous)) }
                let prev = Hex.decode(o["previousHash"]!.stringValue!)!
                var event = o
                event["previousHash"] = nil
                let r = try RecordedEvent(json: .object(event))
                #expect(r.origin.hash == r.hash, "the bundle's events are its log's own")
                let hash = EventHash.compute(using: &encoder, previous: prev, r.hashValues)
                o["hash"] = .string(Hex.encode(hash))
                o["origin"] = .object(["logId": .string(r.origin.logId), "position": .int(r.origin.position), "hash": .string(Hex.encode(hash))])
                lines[i] = JSONValue.object(o).serializedBytes()
                previous = hash
            }
            e[2].data = BundleFixture.join(lines)
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["firstEventHash"] = try BundleFixture.json(lines[0])["hash"]!
            m["lastEventHash"] = .string(Hex.encode(previous!))
            e[0].data = JSONValue.object(m).serializedBytes()
        }
    }

    /// A payload nested as deep as a bundle line may be is read on the import's reading thread (its own stack) and
    /// imported whole.
    @Test func aPayloadNestedToTheParsersLimitImports() throws {
        let d = TempDir()
        let depth = JSONParser.maxDepth - 3  // the line's object and the payload's own
        var nested: JSONValue = "leaf"
        for _ in 0..<depth { nested = .array([nested]) }
        try Self.rechained(shared.bundle, to: d.file("deep.bundle")) { i, _, o in
            guard o["type"]?.stringValue == EventType.scriptRecorded.rawValue, case .object(var p)? = o["payload"] else { return }
            p["nested"] = nested
            o["payload"] = .object(p)
        }
        let target = try Fixture.treesLog(at: d.file("target.sqlite"), baseline: false, seed: 79, logId: "log-deep")
        defer { target.close() }
        let r = try target.importBundle(at: d.file("deep.bundle"), actor: "op", device: "hub")
        #expect(r.report.imported == Int(shared.head))
        let stored = try BundleFixture.events(target).filter { $0.type == EventType.scriptRecorded.rawValue && $0.origin.logId != "log-deep" }
        #expect(!stored.isEmpty && stored.allSatisfy { $0.payload["nested"] == nested })
        #expect(try target.verify().ok)
    }

    /// The log's files, byte for byte (main file and WAL).
    static func fileBytes(_ path: String) -> [Data] {
        ["", "-wal"].map { (try? Data(contentsOf: URL(fileURLWithPath: path + $0))) ?? Data() }
    }

    @Test func aWholeLogImportsIntoAnEmptyLogEquallyAndTwiceChangesNothing() throws {
        let d = TempDir()
        let source = try EditLog.open(at: shared.log, readonly: true)
        defer { source.close() }
        let empty = try Fixture.treesLog(at: d.file("empty.sqlite"), baseline: false, seed: 77, logId: "log-empty")
        let first = try empty.importBundle(at: shared.bundle, actor: "op", device: "hub")
        #expect(first.report.imported == Int(shared.head) && first.report.conflicts.isEmpty)
        let diff = try MergeDevices.differences([empty, source])
        #expect(try empty.digestOfContent() == (try source.digestOfContent()), "\(diff)")
        #expect(first.report.derived == 0, "nothing to derive again when nothing was merged")
        #expect(try empty.verify().ok)
        let before = try empty.eventCount()
        let second = try empty.importBundle(at: shared.bundle, actor: "op", device: "hub")
        #expect(second.report.imported == 0 && second.report.alreadyPresent == Int(shared.head) && second.report.derived == 0)
        #expect(try empty.eventCount() == before)
        // Imported events keep their origin.
        let imported = try empty.events().filter { $0.origin.logId == source.logId }
        let originals = try source.events()
        #expect(imported.count == originals.count)
        for (i, o) in zip(imported, originals) { #expect(i.id == o.id && i.origin.position == o.position && i.origin.hash == o.hash && i.payload == o.payload) }
        // The same ids with other content (one actor changed, the chain hashed again so the bundle verifies) are not
        // "already here": refused by id, nothing written.
        try Self.rechained(shared.bundle, to: d.file("forged.bundle")) { i, _, o in if i == 40 { o["actor"] = "mallory" } }
        _ = try EditLog.verifyBundle(at: d.file("forged.bundle"))
        empty.close()
        let bytes = Self.fileBytes(d.file("empty.sqlite"))
        let reopened = try EditLog.open(at: d.file("empty.sqlite"))
        defer { reopened.close() }
        expectBundleError(.invalidInput, "is already in this log") { _ = try reopened.importBundle(at: d.file("forged.bundle"), actor: "op", device: "hub") }
        #expect(Self.fileBytes(d.file("empty.sqlite")) == bytes)
    }

    /// An import that brings at least as many events as the log holds creates the sessions' index by feature and the
    /// feature tables' relationship key indexes after its events instead of row by row (`EditLog.indexDeferral`,
    /// `always` here: the shared bundle is smaller than `auto` asks). The log ends as a row-by-row import leaves it, definitions
    /// included, and those indexes are new: created after every other object of the schema.
    @Test func aLargeImportCreatesSomeIndexesAfterItsEventsAndEndsAsARowByRowImportDoes() throws {
        let d = TempDir()
        let rowByRow = try Fixture.treesLog(at: d.file("row.sqlite"), baseline: false, seed: 77, logId: "log-row")
        let deferred = try Fixture.treesLog(at: d.file("deferred.sqlite"), baseline: false, seed: 77, logId: "log-deferred")
        rowByRow.indexDeferral = .never
        deferred.indexDeferral = .always
        let a = try rowByRow.importBundle(at: shared.bundle, actor: "op", device: "hub")
        let b = try deferred.importBundle(at: shared.bundle, actor: "op", device: "hub")
        #expect(a.report.imported == Int(shared.head) && b.report == a.report)
        #expect(try deferred.digestOfContent() == (try rowByRow.digestOfContent()))
        #expect(try deferred.verify().ok, "definitions and projections as a rebuild leaves them")
        rowByRow.close(); deferred.close()
        func schemaOrder(_ path: String) throws -> [String] {
            try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master ORDER BY rowid") }
        }
        let row = try schemaOrder(d.file("row.sqlite")), moved = try schemaOrder(d.file("deferred.sqlite"))
        let deferredNames = try DatabaseQueue(path: d.file("row.sqlite")).read { try ProjectionTables.importDeferredIndexes($0) }
        #expect(deferredNames.count >= 3 && deferredNames.contains("p_sessions_feature") && !deferredNames.contains("p_sessions_actor"), "\(deferredNames)")
        #expect(Set(row) == Set(moved))
        #expect(Array(moved.suffix(deferredNames.count)) == deferredNames, "\(moved)")
        #expect(Array(row.suffix(deferredNames.count)) != deferredNames, "a row-by-row import leaves them where the log's creation put them: \(row)")
    }

    /// The rule: at least the minimum, and at least as many events as the log holds.
    @Test func indexesAreDeferredOnlyForAnImportAsLargeAsTheLog() {
        #expect(Importer.defersIndexes(expectedEvents: 20_000, held: 1))
        #expect(Importer.defersIndexes(expectedEvents: 50_000, held: 50_000))
        #expect(!Importer.defersIndexes(expectedEvents: 19_999, held: 1))
        #expect(!Importer.defersIndexes(expectedEvents: 50_000, held: 50_001))
        #expect(!Importer.defersIndexes(expectedEvents: 0, held: 0, minimum: 1))
    }

    @Test func importingYourOwnBundleIsANoOp() throws {
        let d = TempDir()
        try shared.copyLog(to: d.file("own.sqlite"))
        let log = try EditLog.open(at: d.file("own.sqlite"))
        // As large as the log, so an import would create some indexes after its events; of its own events, it
        // writes nothing at all.
        log.indexDeferral = .always
        let n = try log.eventCount()
        let before = Self.fileBytes(d.file("own.sqlite"))
        let r = try log.importBundle(at: shared.bundle, actor: "op", device: "hub")
        #expect(r.report.imported == 0 && r.report.alreadyPresent == Int(n) && r.report.decisions == 0)
        #expect(try log.eventCount() == n)
        #expect(Self.fileBytes(d.file("own.sqlite")) == before, "the log is byte-identical")
    }

    @Test func everyBadBundleIsRefusedAndTheLogStaysByteIdentical() throws {
        let d = TempDir()
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: shared.bundle)))
        func write(_ bytes: [UInt8], _ name: String) throws -> String { try Data(bytes).write(to: URL(fileURLWithPath: d.file(name))); return d.file(name) }
        var cases: [(String, String, EditLogError.Kind)] = []
        cases.append(("truncated", try write(Array(b.prefix(b.count / 2)), "truncated.bundle"), .corrupt))
        for (i, offset) in [30, b.count / 2, b.count - 5].enumerated() {
            var m = b
            m[offset] ^= 0x10
            cases.append(("flipped bit at \(offset)", try write(m, "flip\(i).bundle"), .corrupt))
        }
        var magic = b
        magic[0] = 0x50
        cases.append(("wrong magic", try write(magic, "magic.bundle"), .invalidInput))
        try BundleFixture.edit(shared.bundle, to: d.file("future.bundle")) { e in
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["formatVersion"] = 9
            e[0].data = JSONValue.object(m).serializedBytes()
        }
        cases.append(("future format", d.file("future.bundle"), .unsupported))
        let bomb = [UInt8]((0..<6).flatMap { _ in GzipMember.compress([UInt8](repeating: 0, count: 16 << 20), level: 9) })
        cases.append(("decompression bomb", try write(bomb, "bomb.bundle"), .invalidInput))
        try BundleFixture.edit(shared.bundle, to: d.file("lie.bundle")) { e in
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["eventCount"] = .int(shared.head + 1)
            e[0].data = JSONValue.object(m).serializedBytes()
        }
        cases.append(("a manifest that lies", d.file("lie.bundle"), .corrupt))
        try BundleFixture.edit(shared.bundle, to: d.file("chain.bundle")) { e in
            var lines = BundleFixture.lines(e[2].data)
            var o = try BundleFixture.json(lines[Int(shared.head) - 3]).objectValue!
            o["actor"] = "mallory"
            lines[Int(shared.head) - 3] = JSONValue.object(o).serializedBytes()
            e[2].data = BundleFixture.join(lines)
        }
        cases.append(("a broken chain near the end", d.file("chain.bundle"), .corrupt))
        // An honest chain (hashes computed again) holding, mid-bundle, an event type this build does not know: the
        // bundle reads clean, and the import fails in the merge while the reading thread is ahead of it.
        try Self.rechained(shared.bundle, to: d.file("unknown.bundle")) { i, count, o in
            if i == count / 2 { o["type"] = "FeatureTeleported" }
        }
        _ = try BundleFixture.read(d.file("unknown.bundle"))
        cases.append(("an event type this build does not know, mid-bundle", d.file("unknown.bundle"), .unsupported))
        try BundleFixture.edit(shared.bundle, to: d.file("noblob.bundle")) { e in
            e.removeAll { $0.name.hasPrefix("blobs/") }
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["blobCount"] = 0
            m["blobBytes"] = 0
            e[0].data = JSONValue.object(m).serializedBytes()
        }
        cases.append(("events referencing missing blobs", d.file("noblob.bundle"), .invalidInput))
        try BundleFixture.edit(shared.bundle, to: d.file("badblob.bundle")) { e in
            let i = e.firstIndex { $0.name.hasPrefix("blobs/") }!
            e[i].data[0] ^= 0xFF
        }
        cases.append(("a blob that does not match its hash", d.file("badblob.bundle"), .corrupt))
        // Signed, but by a key the importer does not trust.
        try shared.copyLog(to: d.file("signer.sqlite"))
        let signer = try EditLog.open(at: d.file("signer.sqlite"))
        let key = BundleSignature.generateKeyPair(), other = BundleSignature.generateKeyPair()
        _ = try signer.exportBundle(to: d.file("signed.bundle"), signingKey: key.privateKey)
        signer.close()
        let target = try Fixture.treesLog(at: d.file("target.sqlite"), baseline: false, seed: 78, logId: "log-target")
        let bytesBefore = Self.fileBytes(d.file("target.sqlite"))
        let n = try target.eventCount()
        for (name, path, kind) in cases {
            expectBundleError(kind, "") { _ = try target.importBundle(at: path, actor: "op", device: "hub") }
            #expect(try target.eventCount() == n, "\(name): events were written")
            #expect(Self.fileBytes(d.file("target.sqlite")) == bytesBefore, "\(name): the log's bytes changed")
        }
        expectBundleError(.validation, "") { _ = try target.importBundle(at: d.file("signed.bundle"), trust: [other.publicKey], actor: "op", device: "hub") }
        #expect(Self.fileBytes(d.file("target.sqlite")) == bytesBefore, "untrusted signature: the log's bytes changed")
        // The same bundle with its signature's bytes altered.
        try BundleFixture.edit(d.file("signed.bundle"), to: d.file("badsig.bundle")) { e in
            let i = e.firstIndex { $0.name == BundleLayout.signature }!
            var o = try BundleFixture.json(e[i].data).objectValue!
            var sig = [UInt8](Data(base64Encoded: o["signature"]!.stringValue!)!)
            sig[5] ^= 1
            o["signature"] = .string(Data(sig).base64EncodedString())
            e[i].data = JSONValue.object(o).serializedBytes()
        }
        #expect(throws: EditLogError.self) { _ = try target.importBundle(at: d.file("badsig.bundle"), trust: [key.publicKey], actor: "op", device: "hub") }
        #expect(Self.fileBytes(d.file("target.sqlite")) == bytesBefore, "bad signature: the log's bytes changed")
        // A trusted signature imports.
        let ok = try target.importBundle(at: d.file("signed.bundle"), trust: [key.publicKey], actor: "op", device: "hub")
        #expect(ok.report.imported == Int(shared.head) && ok.contents.signer == key.publicKey)
        #expect(try target.verify().ok)
    }
}

extension BundleImportTests {
    @Test func aBundleOfAnotherSchemaBringsTheFieldsThisLogLacks() throws {
        let d = TempDir()
        // A log whose Trees layer lacks the Wires field (it never had it) adopts it from the bundle: a SchemaChanged of
        // its own, cause import:<the bundle's log>, recorded before the bundle's events (BundleSchemaChangeTests has more).
        var service = try Fixture.json("service.json")
        func dropWires(_ v: JSONValue) -> JSONValue {
            guard var o = v.objectValue else { return v }
            if o["name"]?.stringValue == "Trees", let fields = o["fields"]?.arrayValue {
                o["fields"] = .array(fields.filter { $0["name"]?.stringValue != "Wires" })
            }
            for k in ["layers", "tables"] { if let a = o[k]?.arrayValue { o[k] = .array(a.map(dropWires)) } }
            return .object(o)
        }
        service = dropWires(service)
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        func narrowLog(_ name: String, seed: UInt64) throws -> EditLog {
            try EditLog.create(at: d.file(name + ".sqlite"), service: [("service.json", service)], webmap: try Fixture.json("webmap.json"),
                               rules: try InputFiles.rules(Paths.trees + "/rules.json"), clock: clock, ids: UUIDv7Generator(clock: clock, seed: seed), logId: "log-" + name)
        }
        let adopter = try narrowLog("adopter", seed: 8)
        let adopted = try adopter.importBundle(at: shared.bundle, actor: "op", device: "hub").report
        #expect(adopted.schemaChanges.map(\.text) == ["field-added Trees.Wires: esriFieldTypeSmallInteger"], "\(adopted.schemaChanges.map(\.text))")
        let origin = try BundleReader(path: shared.bundle).manifest.originLogId
        #expect(try adopter.schemaVersions().last?.cause == Cause.schemaImport(from: origin))
        #expect(adopter.schema.layer(id: 0)?.field("Wires") != nil)
        #expect(try adopter.verify().ok)
        adopter.close()
        let narrow = try narrowLog("narrow", seed: 9)

        // The other way it imports, schema event and all (a bundle from position 0 carries the narrow log's
        // SchemaDefined), and the wide log goes on with its own schema: Wires is still a field, queries, edits,
        // a rebuild and verify all work.
        let tree = newGID(700)
        for cmd in try script([#"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"n-1","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                               #"{"op":"finish","session":"n-1"}"#], actor: "nina") { try narrow.apply(cmd) }
        let sent = try narrow.exportBundle(to: d.file("narrow.bundle")).manifest.eventCount
        narrow.close()
        try shared.copyLog(to: d.file("wide.sqlite"))
        var wide = try EditLog.open(at: d.file("wide.sqlite"), clock: clock, ids: UUIDv7Generator(clock: clock, seed: 10))
        let r = try wide.importBundle(at: d.file("narrow.bundle"), actor: "op", device: "hub")
        #expect(r.report.imported == Int(sent) && sent > 1)
        wide.close()
        wide = try EditLog.open(at: d.file("wide.sqlite"), clock: clock, ids: UUIDv7Generator(clock: clock, seed: 11))
        defer { wide.close() }
        #expect(try wide.layer("Trees").fields.contains { $0.name == "Wires" })
        #expect(JSONValue.array(try wide.serviceDocuments()).serialized().contains(#""name":"Wires""#))
        try MergeDevices.set(wide, tree, [("Wires", "2"), ("SiteWidth", "4")], at: 3, actor: "walt", session: "w-1")
        let shown = try wide.show(globalId: tree)
        #expect(shown["attributes"]?["Wires"]?.doubleValue == 2 && shown["attributes"]?["DBH"]?.doubleValue == 3, "\(shown)")
        #expect(try wide.queryCount(layer: "Trees", FeatureQuery()) > 0)
        #expect(try wide.verify().ok)
    }
}

extension BundleImportTests {
    @Suite(.tags(.process)) struct ProcessTests {
        /// The issue's "done when": device A and device B, made from the fixtures, edit concurrently (both add trees with
        /// inspections and photos, both edit one tree), exchange bundles both ways through the CLI, and converge under
        /// last-in-wins with no mislinked record and the conflict visible in `editlog conflicts`.
        @Test(arguments: [true, false])
        func twoDevicesExchangeBundlesThroughTheCLIAndConverge(aFirst: Bool) throws {
            let d = TempDir()
            let clock = StepClock(start: 1_780_000_000_000, step: 7)
            let a = try Fixture.treesLog(at: d.file("a.sqlite"), seed: 1, logId: "device-a", clock: clock)
            let b = try Fixture.treesLog(at: d.file("b.sqlite"), seed: 2, logId: "device-b", clock: clock)
            func add(_ log: EditLog, _ n: Int, _ actor: String) throws {
                let lines = [
                    #"{"op":"create","layer":"Trees","globalId":"\#(newGID(n))","session":"\#(actor)-t","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                    #"{"op":"attach","attachmentId":"\#(newGID(n + 1))","name":"\#(actor).jpg","contentType":"image/jpeg","dataBase64":"\#(Data("photo by \(actor)".utf8).base64EncodedString())","session":"\#(actor)-t"}"#,
                    #"{"op":"finish","session":"\#(actor)-t"}"#,
                    #"{"op":"create","layer":"Inspections","globalId":"\#(newGID(n + 2))","session":"\#(actor)-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(newGID(n))"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"}}"#,
                    #"{"op":"finish","session":"\#(actor)-i"}"#,
                ]
                for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
            }
            try add(a, 100, "ann")
            try add(b, 200, "bob")
            try MergeDevices.set(a, MergeDevices.tree, [("SiteWidth", "10")], at: 1, actor: "ann", session: "ann-w")
            try MergeDevices.set(b, MergeDevices.tree, [("SiteWidth", "20")], at: 2, actor: "bob", session: "bob-w")
            a.close(); b.close()
            for (log, name) in [("a.sqlite", "a.bundle"), ("b.sqlite", "b.bundle")] {
                let r = try CLI.run("bundle", "export", d.file(log), "--out", d.file(name), "--peer", "hub")
                #expect(r.status == 0, "\(r.stderr)")
                if BundleFixture.has("gzip") { #expect(try CLI.sh("gzip -t '\(d.file(name))'").status == 0) }
                if BundleFixture.has("tar") {
                    let t = try CLI.sh("tar -tzf '\(d.file(name))'")
                    #expect(t.status == 0 && t.stdout.hasPrefix("manifest.json\nschema.json\nevents/") && t.stdout.contains("SHA256SUMS"), "\(t.stdout.prefix(200))")
                }
            }
            let order = aFirst ? [("b.sqlite", "a.bundle"), ("a.sqlite", "b.bundle")] : [("a.sqlite", "b.bundle"), ("b.sqlite", "a.bundle")]
            // The second import prints its summary as text: its conflicts with whole ids (checked below).
            var summaries: [String: String] = [:]
            for (i, (log, bundle)) in order.enumerated() {
                if i == 1 {
                    let r = try CLI.run("bundle", "import", d.file(log), d.file(bundle), "--actor", "operator")
                    #expect(r.status == 0 && r.stdout.contains("imported "), "\(r.stdout)\(r.stderr)")
                    summaries[log] = r.stdout
                    continue
                }
                let r = try CLI.run("bundle", "import", d.file(log), d.file(bundle), "--json", "--actor", "operator")
                #expect(r.status == 0, "\(r.stderr)")
                let j = try JSONParser.parse(r.stdout)
                #expect((j["imported"]?.intValue ?? 0) > 0)
            }
            let la = try EditLog.open(at: d.file("a.sqlite")), lb = try EditLog.open(at: d.file("b.sqlite"))
            #expect(try la.digestOfContent() == (try lb.digestOfContent()))
            for log in [la, lb] {
                for (n, actor) in [(100, "ann"), (200, "bob")] {
                    #expect(try log.attributes(newGID(n + 2))["TreeGlobalID"]?.stringValue == newGID(n), "an inspection was mislinked")
                    let atts = try log.show(globalId: newGID(n))["attachments"]?.arrayValue ?? []
                    #expect(atts.count == 1 && atts.first?["name"]?.stringValue == "\(actor).jpg", "\(atts)")
                }
                #expect(try log.attributes(MergeDevices.tree)["SiteWidth"]?.doubleValue == 20)
            }
            // The conflict, with base, local and remote and who wrote each, in both logs.
            for log in ["a.sqlite", "b.sqlite"] {
                let r = try CLI.run("conflicts", "list", d.file(log), "--json")
                #expect(r.status == 0, "\(r.stderr)")
                let rows = try r.stdout.split(separator: "\n").map { try JSONParser.parse(String($0)) }
                let c = try #require(rows.first { $0["field"]?.stringValue == "SiteWidth" }, "\(r.stdout)")
                if let summary = summaries[log] {
                    let own = rows.filter { $0["field"]?.stringValue == "SiteWidth" && $0["decidedIn"]?.stringValue == (log == "a.sqlite" ? la : lb).logId }
                    #expect(!own.isEmpty && own.allSatisfy { summary.contains($0["id"]!.stringValue!) }, "\(summary)")
                }
                #expect(c["local"]?["writer"]?["actor"] != nil && c["remote"]?["writer"]?["actor"] != nil && c["base"] != nil)
                #expect(Set([c["local"]?["writer"]?["actor"]?.stringValue, c["remote"]?["writer"]?["actor"]?.stringValue]) == Set(["ann", "bob"]))
                // `show` names the conflict behind the value, in text too.
                let shown = try CLI.run("show", d.file(log), MergeDevices.tree)
                let ids = rows.filter { $0["field"]?.stringValue == "SiteWidth" }.compactMap { $0["id"]?.stringValue }
                #expect(shown.status == 0 && ids.contains { shown.stdout.contains($0) }, "\(shown.stdout)")
                let show = try CLI.run("conflicts", d.file(log), "show", c["id"]!.stringValue!)
                #expect(show.status == 0 && show.stdout.contains("base:") && show.stdout.contains("last-in-wins"), "\(show.stdout)\(show.stderr)")
                // It names the rule it applied (bundles: client time) and prints times in the one human format.
                #expect(show.stdout.contains("rule:   last-in-wins: the later commit by client time wins") && !show.stdout.contains(".000Z"), "\(show.stdout)")
            }
            // An investigator re-resolves: a new event, the value changes.
            let id = try JSONParser.parse(try CLI.run("conflicts", "list", d.file("b.sqlite"), "--json").stdout.split(separator: "\n").first.map(String.init) ?? "")["id"]!.stringValue!
            let res = try CLI.run("conflicts", d.file("b.sqlite"), "resolve", id, "--take", "value", "--value", "15", "--actor", "investigator")
            #expect(res.status == 0, "\(res.stderr)")
            #expect(try lb.attributes(MergeDevices.tree)["SiteWidth"]?.doubleValue == 15)
            let bad = try CLI.run("conflicts", "resolve", d.file("b.sqlite"), id, "--take", "value")
            #expect(bad.status == 64)
            // The text list prints whole ids, which `show` takes; the log may come first or after the action.
            let text = try CLI.run("conflicts", d.file("b.sqlite"), "list")
            #expect(text.status == 0 && text.stdout.contains(id), "\(text.stdout)\(text.stderr)")
            #expect(try CLI.run("conflicts", "show", d.file("b.sqlite"), id).stdout == (try CLI.run("conflicts", d.file("b.sqlite"), "show", id).stdout))
            // --feature takes a GlobalID: anything else is a usage error, not an empty list.
            let byTree = try CLI.run("conflicts", d.file("b.sqlite"), "list", "--feature", MergeDevices.tree)
            #expect(byTree.status == 0 && byTree.stdout.contains(id), "\(byTree.stderr)")
            let nonsense = try CLI.run("conflicts", d.file("b.sqlite"), "list", "--feature", "nonsense")
            #expect(nonsense.status == 64 && nonsense.stderr.contains("--feature"), "\(nonsense.stderr)")
        }
    }
}
