@testable import EditLogBundle
import EditLog
import Foundation
import Testing

/// Every kind of damaged or dishonest bundle is refused with an EditLogError of the right kind that says where,
/// and the CLI maps each to its exit code.
@Suite struct BundleBadInputTests {
    let shared = SharedBundle.shared

    @Test func truncatedFilesAreCorrupt() throws {
        let d = TempDir()
        let b = try bytes(shared.bundle)
        for keep in [1, 10, 100, b.count / 3, b.count / 2, b.count - 9, b.count - 1] {
            try write(Array(b.prefix(keep)), d.file("t.bundle"))
            expectBundleError(keep < 2 ? .invalidInput : .corrupt, keep < 2 ? "gzip magic" : "truncated") { try read(d.file("t.bundle")) }
            // The location names the file once.
            do { try read(d.file("t.bundle")) } catch let e as EditLogError { #expect(e.description.components(separatedBy: "t.bundle").count == 2, "\(e)") }
        }
        try write(Array(b.prefix(b.count / 2)), d.file("t.bundle"))
        expectBundleError(.corrupt, "truncated") { try read(d.file("t.bundle")) }
    }

    @Test func flippedBitsAreRefused() throws {
        let d = TempDir()
        let b = try bytes(shared.bundle)
        // Early in the first member (its deflate data), the middle, and in the last member (data and trailer).
        for (offset, bit) in [(20, 3), (200, 0), (b.count / 2, 5), (b.count - 40, 1), (b.count - 6, 2), (b.count - 2, 7)] {
            var m = b
            m[offset] ^= UInt8(1 << bit)
            try write(m, d.file("f.bundle"))
            expectBundleError(.corrupt, "f.bundle") { try read(d.file("f.bundle")) }
        }
        // Every bit of the first member's header and of the second's: MTIME, XFL, OS and the flags too, which no
        // CRC-32 covers (the header's own CRC-16 does). The magic of the first is "not a bundle"; any other is damage.
        let header: [UInt8] = [0x1F, 0x8B, 8, 2]
        let found = (12..<(b.count - 4)).first { (i: Int) -> Bool in b[i..<(i + 4)].elementsEqual(header) }
        let second = try #require(found)
        for member in [0, second] {
            #expect(b[member + 3] == 0x02, "each member's header has FHCRC")
            for offset in member..<(member + 12) {
                for bit in 0..<8 {
                    var m = b
                    m[offset] ^= UInt8(1 << bit)
                    try write(m, d.file("h.bundle"))
                    expectBundleError(offset < 2 ? .invalidInput : .corrupt, "h.bundle") { try read(d.file("h.bundle")) }
                }
            }
        }
    }

    /// Bytes no checksum or signature covers: an entry's padding to 512 and the end-of-archive marker must be zeros,
    /// or the same signed bundle could be many files.
    @Test func nonZeroPaddingOrEndMarkerIsRefused() throws {
        let d = TempDir()
        let tar = try BundleFixture.tarBytes(shared.bundle)
        let manifestSize = try BundleFixture.unpack(shared.bundle)[0].data.count
        #expect(manifestSize % 512 != 0)
        var padded = tar
        padded[512 + manifestSize] = 0x41
        try write(GzipMember.compress(padded), d.file("pad.bundle"))
        expectBundleError(.corrupt, "manifest.json: its padding to 512 bytes is not all NULs") { try read(d.file("pad.bundle")) }
        var marker = tar
        marker[marker.count - 100] = 0x01
        try write(GzipMember.compress(marker), d.file("end.bundle"))
        expectBundleError(.corrupt, "end-of-archive marker's second block is not all zeros") { try read(d.file("end.bundle")) }
        try write(GzipMember.compress(tar), d.file("same.bundle"))
        try read(d.file("same.bundle"))
    }

    @Test func wrongMagicIsNotABundle() throws {
        let d = TempDir()
        var b = try bytes(shared.bundle)
        b[0] = 0x50
        try write(b, d.file("m.bundle"))
        expectBundleError(.invalidInput, "not an EditLog bundle") { try read(d.file("m.bundle")) }
        try write(Array("hello\n".utf8), d.file("text.bundle"))
        expectBundleError(.invalidInput, "gzip magic") { try read(d.file("text.bundle")) }
        expectBundleError(.notFound, "no bundle at") { try read(d.file("absent.bundle")) }
        // A gzip that is not a tar, and a tar whose first entry is not the manifest.
        try BundleFixture.pack([("hello.txt", Array("hi".utf8))], to: d.file("other.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "manifest.json must be") { try read(d.file("other.bundle")) }
    }

    @Test func aFutureFormatIsUnsupported() throws {
        let d = TempDir()
        try BundleFixture.edit(shared.bundle, to: d.file("v2.bundle")) { e in
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["formatVersion"] = 2
            m["somethingNew"] = true
            e[0].data = JSONValue.object(m).serializedBytes()
        }
        expectBundleError(.unsupported, "format 2") { try read(d.file("v2.bundle")) }
        // A flipped bit that makes the version read 3 is damage (the member's CRC says so), not a newer format. The
        // first member is stored (deflate level 0) so the manifest's bytes are in the file as they are.
        let entries = try BundleFixture.unpack(shared.bundle)
        let head = entries.prefix(2).flatMap { Ustar.entry(name: $0.name, data: $0.data, mtime: 0) }
        let rest = entries.dropFirst(2).flatMap { Ustar.entry(name: $0.name, data: $0.data, mtime: 0) } + [UInt8](repeating: 0, count: 1024)
        var file = GzipMember.compress(head, level: 0)
        let version = Array(#""formatVersion":1"#.utf8)
        let at = try #require((0...(file.count - version.count)).first { file[$0..<($0 + version.count)].elementsEqual(version) }) + version.count - 1
        file[at] ^= 0x02
        try write(file + GzipMember.compress(rest), d.file("flipped.bundle"))
        expectBundleError(.corrupt, "") { try read(d.file("flipped.bundle")) }
    }

    @Test func decompressionBombsAreRefusedNotExpanded() throws {
        let d = TempDir()
        // 16 MiB of zeros in one gzip member: about 16 KB on disk.
        let member = GzipMember.compress([UInt8](repeating: 0, count: 16 << 20), level: 9)
        try write(member, d.file("bomb.gz"))
        #expect(member.count < 64 << 10)
        expectBundleError(.invalidInput, "decompression bomb") {
            try read(d.file("bomb.gz"), limits: BundleLimits(maxTotalBytes: 1 << 40, maxRatio: 100, ratioGrace: 1 << 20))
        }
        expectBundleError(.invalidInput, "beyond 524288 bytes") {
            try read(d.file("bomb.gz"), limits: BundleLimits(maxTotalBytes: 512 << 10, maxRatio: 1 << 20, ratioGrace: 1 << 40))
        }
        // With the defaults, a member-after-member bomb beyond the grace is refused by its ratio.
        let many = [UInt8]((0..<6).flatMap { _ in member })
        try write(many, d.file("bomb2.gz"))
        expectBundleError(.invalidInput, "decompression bomb") { try read(d.file("bomb2.gz")) }
        // Zeros after a whole bundle's end-of-archive marker: a tar record's padding reads, more is a bomb (a ratio over
        // the whole bundle would let a valid prefix carry it).
        let bundle = try bytes(shared.bundle)
        try write(bundle + GzipMember.compress([UInt8](repeating: 0, count: 9 << 10)), d.file("padded.bundle"))
        try read(d.file("padded.bundle"))
        try write(bundle + GzipMember.compress([UInt8](repeating: 0, count: 2 << 20), level: 9), d.file("tail.bundle"))
        expectBundleError(.invalidInput, "after the end-of-archive marker") { try read(d.file("tail.bundle")) }
        // An entry that declares more than the file can honestly expand to is refused from its header: its zeros are
        // never inflated (before, a 1 GiB blob of zeros was inflated into memory, then refused).
        let head = try BundleFixture.unpack(shared.bundle).prefix(2)
        var tar = head.flatMap { Ustar.entry(name: $0.name, data: $0.data, mtime: 0) }
        tar += Ustar.header(name: BundleLayout.blobsPrefix + String(repeating: "0", count: 64), size: 1 << 30, mtime: 0)
        tar += [UInt8](repeating: 0, count: 4 << 20)
        try write(GzipMember.compress(tar, level: 9), d.file("declared.bundle"))
        expectBundleError(.invalidInput, "nothing of it was inflated") { try read(d.file("declared.bundle")) }
        expectBundleError(.invalidInput, "beyond the limit of 1048576 bytes") {
            try read(d.file("declared.bundle"), limits: BundleLimits(maxTotalBytes: 1 << 20, maxRatio: 1 << 20, ratioGrace: 1 << 40))
        }
    }

    /// schema.json replaced along with the manifest's fingerprint (an unsigned bundle can be rewritten so): the
    /// exporting log's last schema event, carried in the bundle, still defines the schema at its end, and the two must agree.
    @Test func aSchemaJsonThatIsNotTheFirstEventsPayloadIsCaught() throws {
        let d = TempDir()
        try BundleFixture.edit(shared.bundle, to: d.file("schema.bundle")) { entries in
            var schema = try BundleFixture.json(entries[1].data)
            schema = .object((schema.objectValue ?? [:]).merging(["note": "replaced"]) { $1 })
            entries[1].data = schema.serializedBytes()
            var manifest = try BundleFixture.json(entries[0].data).objectValue ?? [:]
            manifest["schemaFingerprint"] = .string(SchemaFingerprint.of(schemaPayload: schema))
            entries[0].data = JSONValue.object(manifest).serializedBytes() + [0x0A]
        }
        expectBundleError(.corrupt, "schema.json is not the schema in force at the bundle's end") { try read(d.file("schema.bundle")) }
    }

    /// Entries larger than a reader takes (`schemas/bundle.md`, Limits) are refused as input (65) from their header,
    /// before any of their bytes are read: a manifest over 1 MiB, an event chunk over 64 MiB, SHA256SUMS over 64 MiB,
    /// a signature over 64 KiB.
    @Test func entriesLargerThanAReaderTakesAreRefusedAsInput() throws {
        let d = TempDir()
        let entries = try BundleFixture.unpack(shared.bundle)
        let roomy = BundleLimits(maxTotalBytes: 1 << 40, maxRatio: 1 << 20, ratioGrace: 1 << 40)
        func refused(_ tar: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try write(GzipMember.compress(tar + [UInt8](repeating: 0, count: 1 << 20), level: 1), d.file("big.bundle"))
            expectBundleError(.invalidInput, fragment, sourceLocation: sourceLocation) { try read(d.file("big.bundle"), limits: roomy) }
        }
        try refused(Ustar.header(name: BundleLayout.manifest, size: 2 << 20, mtime: 0), "manifest.json is 2097152 bytes")
        let head = entries.prefix(2).flatMap { Ustar.entry(name: $0.name, data: $0.data, mtime: 0) }
        try refused(head + Ustar.header(name: BundleLayout.chunkName(1), size: 65 << 20, mtime: 0), "an event chunk is 68157440 bytes")
        let upToSums = entries.filter { $0.name != BundleLayout.signature && $0.name != BundleLayout.sums }.flatMap { Ustar.entry(name: $0.name, data: $0.data, mtime: 0) }
        try refused(upToSums + Ustar.header(name: BundleLayout.sums, size: 65 << 20, mtime: 0), "SHA256SUMS is 68157440 bytes")
        let sums = try #require(entries.first { $0.name == BundleLayout.sums })
        try refused(upToSums + Ustar.entry(name: sums.name, data: sums.data, mtime: 0) + Ustar.header(name: BundleLayout.signature, size: 100_000, mtime: 0),
                    "SHA256SUMS.sig is 100000 bytes")
    }

    @Test func aManifestThatLiesIsCaught() throws {
        let d = TempDir()
        let lies: [(String, JSONValue, String)] = [
            ("eventCount", 5, "eventCount"), ("lastEventHash", .string(String(repeating: "ab", count: 32)), "lastEventHash"),
            ("firstEventHash", .string(String(repeating: "cd", count: 32)), "firstEventHash"), ("blobCount", 3, "blobCount"),
            ("blobBytes", 1, "blobBytes"), ("toPosition", .int(shared.head + 5), "0...\(shared.head + 5)"),
            ("schemaFingerprint", .string(String(repeating: "0", count: 64)), "schemaFingerprint"),
        ]
        for (key, value, fragment) in lies {
            try BundleFixture.edit(shared.bundle, to: d.file("lie.bundle")) { e in
                var m = try BundleFixture.json(e[0].data).objectValue!
                m[key] = value
                e[0].data = JSONValue.object(m).serializedBytes()
            }
            expectBundleError(.corrupt, fragment) { try read(d.file("lie.bundle")) }
        }
    }

    @Test func eventsWhoseChainBreaksAreCaught() throws {
        let d = TempDir()
        // A changed payload: the event's own hash no longer matches.
        try BundleFixture.edit(shared.bundle, to: d.file("c.bundle")) { e in
            var lines = BundleFixture.lines(e[2].data)
            var o = try BundleFixture.json(lines[10]).objectValue!
            o["actor"] = "mallory"
            lines[10] = JSONValue.object(o).serializedBytes()
            e[2].data = BundleFixture.join(lines)
        }
        expectBundleError(.corrupt, "events/00000001.ndjson: line 11: position 11: the event's hash does not match") { try read(d.file("c.bundle")) }
        // A removed event (manifest count adjusted): the next one does not follow.
        try BundleFixture.edit(shared.bundle, to: d.file("r.bundle")) { e in
            var lines = BundleFixture.lines(e[2].data)
            lines.remove(at: 20)
            e[2].data = BundleFixture.join(lines)
            var m = try BundleFixture.json(e[0].data).objectValue!
            m["eventCount"] = .int(shared.head - 1)
            e[0].data = JSONValue.object(m).serializedBytes()
        }
        expectBundleError(.corrupt, "the chain breaks") { try read(d.file("r.bundle")) }
        // Two events swapped.
        try BundleFixture.edit(shared.bundle, to: d.file("s.bundle")) { e in
            var lines = BundleFixture.lines(e[2].data)
            lines.swapAt(30, 31)
            e[2].data = BundleFixture.join(lines)
        }
        expectBundleError(.corrupt, "line 31") { try read(d.file("s.bundle")) }
        // A line that is not JSON.
        try BundleFixture.edit(shared.bundle, to: d.file("j.bundle")) { e in
            var lines = BundleFixture.lines(e[2].data)
            lines[4] = Array("{\"position\": ".utf8)
            e[2].data = BundleFixture.join(lines)
        }
        expectBundleError(.corrupt, "line 5: not valid JSON") { try read(d.file("j.bundle")) }
    }

    @Test func checksumsThatDoNotMatchTheEntries() throws {
        let d = TempDir()
        var entries = try BundleFixture.unpack(shared.bundle)
        // A changed blob whose name is right but SHA256SUMS line wrong: change SHA256SUMS itself.
        let i = entries.firstIndex { $0.name == "SHA256SUMS" }!
        var text = String(decoding: entries[i].data, as: UTF8.self)
        text = text.replacingOccurrences(of: "  schema.json", with: "  schema2.json")
        entries[i].data = Array(text.utf8)
        try BundleFixture.pack(entries, to: d.file("s.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "SHA256SUMS: line 2 names schema2.json") { try read(d.file("s.bundle")) }
        // No SHA256SUMS at all.
        entries.remove(at: i)
        try BundleFixture.pack(entries, to: d.file("n.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "without SHA256SUMS") { try read(d.file("n.bundle")) }
        // An entry after SHA256SUMS.
        var after = try BundleFixture.unpack(shared.bundle)
        after.append(("notes.txt", Array("hi".utf8)))
        try BundleFixture.pack(after, to: d.file("a.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "follows SHA256SUMS") { try read(d.file("a.bundle")) }
        // SHA256SUMS is checked as it is read: a line too many, a last line without its newline, an empty list.
        let sums = try BundleFixture.unpack(shared.bundle)
        let j = sums.firstIndex { $0.name == "SHA256SUMS" }!
        let lastLine = sums[j].data.dropLast().split(separator: 0x0A).last! + [0x0A]
        for (label, data, message) in [
            ("extra", sums[j].data + lastLine, "lists \(j + 1) entries; the bundle has \(j) before it"),
            ("newline", Array(sums[j].data.dropLast()), "SHA256SUMS: does not end with a newline"),
            ("empty", [], "SHA256SUMS: does not end with a newline"),
        ] {
            var e = sums
            e[j].data = data
            try BundleFixture.pack(e, to: d.file("\(label).bundle"), recomputeSums: false)
            expectBundleError(.corrupt, message) { try read(d.file("\(label).bundle")) }
        }
    }

    /// A bundle of some layers may end after its last event, so `bundle verify` cannot tell a toPosition edited to
    /// be later: the log's events of those layers between its last event and toPosition do.
    @Test func sinceABundleOfSomeLayersWhoseManifestWasEditedIsRefused() throws {
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let trees = try log.exportBundle(to: d.file("trees.bundle"), since: .position(100), until: .position(300), layers: ["Trees"])
        #expect(try log.exportBundle(to: d.file("next.bundle"), since: .bundle(path: d.file("trees.bundle")), layers: ["Trees"]).manifest.fromPosition
                == trees.manifest.toPosition)
        try forge(d.file("trees.bundle"), to: d.file("forged.bundle"), toPosition: 600)
        _ = try BundleFixture.read(d.file("forged.bundle"))
        expectBundleError(.invalidInput, "is of its layers and not in it") {
            _ = try log.exportBundle(to: d.file("x.bundle"), since: .bundle(path: d.file("forged.bundle")), layers: ["Trees"])
        }
        expectNothingWritten(d, "x.bundle")
    }
}

extension BundleBadInputTests {
    @Suite(.tags(.process)) struct ProcessTests {
        let shared = SharedBundle.shared

        @Test func blobsMissingOrNotMatchingTheirName() throws {
            let d = TempDir()
            let entries = try BundleFixture.unpack(shared.bundle)
            let blob = entries.first { $0.name.hasPrefix("blobs/") }!
            // Missing (manifest adjusted): not an error, reported for the caller to decide.
            try BundleFixture.edit(shared.bundle, to: d.file("m.bundle")) { e in
                e.removeAll { $0.name == blob.name }
                var m = try BundleFixture.json(e[0].data).objectValue!
                m["blobCount"] = .int(m["blobCount"]!.intValue! - 1)
                m["blobBytes"] = .int(m["blobBytes"]!.intValue! - Int64(blob.data.count))
                e[0].data = JSONValue.object(m).serializedBytes()
            }
            let (c, _, blobs) = try BundleFixture.read(d.file("m.bundle"))
            #expect(c.missingBlobs == [String(blob.name.dropFirst(6))])
            #expect(blobs[String(blob.name.dropFirst(6))] == nil)
            // `bundle verify` fails on it, naming the blob (its --json says ok: false, and lists it).
            var r = try CLI.run(["bundle", "verify", d.file("m.bundle")])
            #expect(r.status == 65 && r.stderr.contains(String(blob.name.dropFirst(6))) && r.stdout.hasPrefix("incomplete:"), "\(r.stdout) \(r.stderr)")
            r = try CLI.run(["bundle", "verify", d.file("m.bundle"), "--json"])
            let j = try JSONParser.parse(r.stdout)
            #expect(r.status == 65 && j["ok"] == false && j["missingBlobs"]?.arrayValue?.count == 1, "\(r.stdout)")
            // Other bytes under the name.
            try BundleFixture.edit(shared.bundle, to: d.file("b.bundle")) { e in
                let i = e.firstIndex { $0.name == blob.name }!
                e[i].data[0] ^= 1
            }
            expectBundleError(.corrupt, "\(blob.name): the blob's bytes have SHA-256") { try read(d.file("b.bundle")) }
            // A blob no event references.
            try BundleFixture.edit(shared.bundle, to: d.file("u.bundle")) { e in
                let extra: [UInt8] = Array("stowaway".utf8)
                e.insert(("blobs/" + Hex.encode(EventHash.sha256(extra)), extra), at: e.count - 1)
            }
            expectBundleError(.corrupt, "no event of the bundle references this blob") { try read(d.file("u.bundle")) }
        }

        @Test func theCLIExitsWithEachErrorsCode() throws {
            let d = TempDir()
            let b = try bytes(shared.bundle)
            try write(Array(b.prefix(b.count / 2)), d.file("trunc.bundle"))
            try write(Array("hello".utf8), d.file("text.bundle"))
            try BundleFixture.edit(shared.bundle, to: d.file("v2.bundle")) { e in
                var m = try BundleFixture.json(e[0].data).objectValue!
                m["formatVersion"] = 7
                e[0].data = JSONValue.object(m).serializedBytes()
            }
            let k = try BundleSignature.generateKeyFiles(name: d.file("k"))
            let cases: [([String], Int32, String)] = [
                (["bundle", "verify", shared.bundle], 0, "ok: \(shared.head) events"),
                (["bundle", "verify", d.file("trunc.bundle")], 69, "truncated"),
                (["bundle", "verify", d.file("text.bundle")], 65, "not an EditLog bundle"),
                (["bundle", "verify", d.file("v2.bundle")], 70, "format 7"),
                (["bundle", "verify", d.file("absent.bundle")], 68, "no bundle at"),
                (["bundle", "verify", shared.bundle, "--trust", k.publicPath], 66, "not signed"),
                (["bundle", "inspect", d.file("trunc.bundle")], 69, "truncated"),
                (["bundle", "export", shared.log, "--out", d.file("x.bundle"), "--since", "yesterday"], 64, "--since"),
            ]
            for (args, code, fragment) in cases {
                let r = try CLI.run(args)
                #expect(r.status == code, "\(args): \(r.status) \(r.stderr)")
                #expect((r.stdout + r.stderr).contains(fragment), "\(args): \(r.stdout) \(r.stderr)")
            }
        }

        /// `--since bundle:` continues after the bundle's toPosition, so the bundle is read and checked whole first: a
        /// manifest edited to end later would leave the events between unsent for good. Nothing is written.
        @Test func sinceABundleWhoseManifestWasEditedIsRefused() throws {
            let d = TempDir()
            let log = try EditLog.open(at: shared.log, readonly: true)
            defer { log.close() }
            // Positions 601...650, the manifest edited to say 665: 651...665 would be skipped.
            _ = try log.exportBundle(to: d.file("600.bundle"), since: .position(600), until: .position(650))
            try forge(d.file("600.bundle"), to: d.file("forged.bundle"), toPosition: 665)
            expectBundleError(.corrupt, "--since bundle: the bundle does not verify") {
                _ = try log.exportBundle(to: d.file("next.bundle"), since: .bundle(path: d.file("forged.bundle")))
            }
            expectNothingWritten(d, "next.bundle")
            let r = try CLI.run(["bundle", "export", shared.log, "--out", d.file("next.bundle"), "--since", "bundle:" + d.file("forged.bundle")])
            #expect(r.status == 69 && r.stderr.contains("forged.bundle") && r.stderr.contains("the range 600...665"), "\(r.stdout) \(r.stderr)")
            expectNothingWritten(d, "next.bundle")
            // The honest bundle still continues after 650.
            #expect(try log.exportBundle(to: d.file("next.bundle"), since: .bundle(path: d.file("600.bundle"))).manifest.fromPosition == 650)
            // An empty bundle that ends after the log's head.
            #expect(try log.exportBundle(to: d.file("empty.bundle"), since: .position(shared.head)).manifest.eventCount == 0)
            try forge(d.file("empty.bundle"), to: d.file("empty-later.bundle"), toPosition: shared.head + 5, fromPosition: shared.head + 5)
            expectBundleError(.invalidInput, "after this log's last event (\(shared.head))") {
                _ = try log.exportBundle(to: d.file("x.bundle"), since: .bundle(path: d.file("empty-later.bundle")))
            }
            expectNothingWritten(d, "x.bundle")
        }

        /// Two copies of one log (the same log id) that each recorded an edit of their own: a bundle of the one verifies
        /// and its positions exist in the other, but its last event is not the other's event at that position.
        @Test func sinceABundleOfAnotherCopyOfTheLogIsRefused() throws {
            let d = TempDir()
            try shared.copyLog(to: d.file("a.sqlite"))
            try shared.copyLog(to: d.file("b.sqlite"))
            let a = try EditLog.open(at: d.file("a.sqlite")), b = try EditLog.open(at: d.file("b.sqlite"))
            defer { a.close(); b.close() }
            let tree = try Fixture.treeWithoutInspections()
            for (copy, value) in [(a, "Poor"), (b, "Fair")] {
                try copy.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Condition","value":"\#(value)"}"#, #"{"op":"finish"}"#)
            }
            #expect(try a.eventCount() == b.eventCount() && a.eventCount() > shared.head)
            let theirs = try b.exportBundle(to: d.file("b.bundle"), since: .position(shared.head))
            expectBundleError(.invalidInput, "this log's event there has") {
                _ = try a.exportBundle(to: d.file("x.bundle"), since: .bundle(path: d.file("b.bundle")))
            }
            expectNothingWritten(d, "x.bundle")
            let r = try CLI.run(["bundle", "export", d.file("a.sqlite"), "--out", d.file("x.bundle"), "--since", "bundle:" + d.file("b.bundle")])
            #expect(r.status == 65 && r.stderr.contains("b.bundle") && r.stderr.contains("at position \(theirs.manifest.toPosition)"), "\(r.stdout) \(r.stderr)")
            expectNothingWritten(d, "x.bundle")
            #expect(try b.exportBundle(to: d.file("b-next.bundle"), since: .bundle(path: d.file("b.bundle"))).manifest.fromPosition == theirs.manifest.toPosition)
        }
    }
}

// The helpers of both suites of this file.

private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
private func write(_ b: [UInt8], _ path: String) throws { try Data(b).write(to: URL(fileURLWithPath: path)) }

private func read(_ path: String, limits: BundleLimits = .default) throws { _ = try BundleFixture.read(path, limits: limits) }

/// A bundle's manifest edited to say `toPosition` (its checksums made again).
private func forge(_ path: String, to out: String, toPosition to: Int64, fromPosition from: Int64? = nil) throws {
    try BundleFixture.edit(path, to: out) { e in
        var m = try BundleFixture.json(e[0].data).objectValue!
        m["toPosition"] = .int(to)
        if let from { m["fromPosition"] = .int(from) }
        e[0].data = JSONValue.object(m).serializedBytes() + [0x0A]
    }
}

private func expectNothingWritten(_ d: TempDir, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for f in [name, name + ".partial"] { #expect(!FileManager.default.fileExists(atPath: d.file(f)), "\(f)", sourceLocation: sourceLocation) }
}
