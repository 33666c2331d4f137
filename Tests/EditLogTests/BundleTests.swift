@testable import EditLogBundle
import EditLog
import EditLogStore
import Foundation
import GRDB
import Testing

/// One recorded fixture log and its full bundle, made once and only read by the tests that share them.
struct SharedBundle: Sendable {
    let dir: String
    let log: String
    let bundle: String
    let head: Int64

    static let shared: SharedBundle = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-bundle-shared-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let log = try! BundleFixture.log(at: dir + "/log.sqlite")
        defer { log.close() }
        _ = try! log.exportBundle(to: dir + "/full.bundle")
        // Swift Testing has no end-of-run hook: the directory goes when the test process exits.
        atexit { try? FileManager.default.removeItem(atPath: SharedBundle.shared.dir) }
        return SharedBundle(dir: dir, log: dir + "/log.sqlite", bundle: dir + "/full.bundle", head: try! log.eventCount())
    }()

    /// A private copy of the log, for tests that write to it.
    func copyLog(to path: String) throws {
        try FileManager.default.copyItem(atPath: log, toPath: path)
    }
}

@Suite struct BundleTests {
    let shared = SharedBundle.shared

    @Test func roundTripIsEventForEventAndBlobForBlob() throws {
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let expected = try BundleFixture.events(log)
        let (c, events, blobs) = try BundleFixture.read(shared.bundle)
        #expect(events.count == expected.count)
        #expect(events == expected)
        #expect(c.eventCount == expected.count)
        #expect(c.missingBlobs.isEmpty)
        #expect(!blobs.isEmpty)
        for (sha, bytes) in blobs { #expect(try log.blob(sha256: sha) == bytes, "blob \(sha)") }
        let referenced = Set(expected.flatMap(\.blobReferences))
        #expect(Set(blobs.keys) == referenced)
        #expect(c.blobShas == referenced)
        let m = c.manifest
        #expect(m.formatVersion == 1 && m.originLogId == "test-log" && m.fromPosition == 0 && m.toPosition == shared.head)
        #expect(m.eventCount == shared.head && m.firstEventHash == Hex.encode(expected[0].hash) && m.lastEventHash == Hex.encode(expected.last!.hash))
        #expect(m.blobCount == Int64(blobs.count) && m.blobBytes == Int64(blobs.values.reduce(0) { $0 + $1.count }))
        #expect(m.schemaFingerprint == SchemaFingerprint.of(schemaPayload: expected[0].payload))
        #expect(c.schema == expected[0].payload)
        #expect(m.creator.hasPrefix("editlog \(EditLogVersion.current)"))
        #expect(Timestamp.parse(m.createdAt) != nil)
        #expect(c.signer == nil)
        // The manifest reads back as written.
        #expect(try BundleManifest(json: m.json) == m)
    }

    @Test func recordedEventJSONDecodesToTheSameEvent() throws {
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        var encoder = EventHash.Encoder()
        var previous = EventHash.genesis
        for e in try BundleFixture.events(log) {
            let back = try RecordedEvent(json: try JSONParser.parse(e.json.serialized()))
            #expect(back == e)
            #expect(back.chainHashMatches(previous: previous, using: &encoder), "position \(e.position)")
            previous = e.hash
        }
        let some = try BundleFixture.events(log)[3].json.objectValue!
        expectBundleError(.invalidInput, "lacks \"session\"") {
            var o = some
            o["session"] = nil
            _ = try RecordedEvent(json: .object(o))
        }
        expectBundleError(.invalidInput, "unknown key \"extra\"") {
            var o = some
            o["extra"] = 1
            _ = try RecordedEvent(json: .object(o))
        }
        // As many keys as an event has, one of them unknown: the unknown key is named, before the missing one.
        expectBundleError(.invalidInput, "unknown key \"zz\"") {
            var o = some
            o["session"] = nil
            o["zz"] = 1
            _ = try RecordedEvent(json: .object(o))
        }
        // Of several unknown keys, the first in sorted order.
        expectBundleError(.invalidInput, "unknown key \"aa\"") {
            var o = some
            o["zz"] = 1
            o["aa"] = 2
            _ = try RecordedEvent(json: .object(o))
        }
        var origin = some["origin"]!.objectValue!
        origin["hash"] = nil
        origin["sha"] = "x"
        expectBundleError(.invalidInput, "unknown key \"origin.sha\"") {
            var o = some
            o["origin"] = .object(origin)
            _ = try RecordedEvent(json: .object(o))
        }
        origin["sha"] = nil
        expectBundleError(.invalidInput, "lacks \"origin.hash\"") {
            var o = some
            o["origin"] = .object(origin)
            _ = try RecordedEvent(json: .object(o))
        }
    }

    @Test func theExportReadsThroughASmallCacheAndGivesTheConnectionItsOwnBack() throws {
        let d = TempDir()
        try shared.copyLog(to: d.file("log.sqlite"))
        let store = try EventStore.open(at: d.file("log.sqlite"))
        defer { try? store.close() }
        let cache = { () throws -> Int in try store.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") ?? 0 } }
        #expect(try cache() == -EventStore.writerCacheKiB)
        #expect(BundleExport.readCacheKiB < EventStore.writerCacheKiB)
        // While it reads (its progress is reported inside its read, on the connection it reads with).
        var during: Set<Int> = []
        _ = try store.read { db in
            try BundleExport.write(db, store: store, from: 0, to: d.file("r.bundle"), options: BundleExportOptions(blockSize: 4096), engine: .bundle) { _, _ in
                during.insert((try? Int.fetchOne(db, sql: "PRAGMA cache_size")) ?? 0)
            }
        }
        #expect(during == [-BundleExport.readCacheKiB])
        #expect(try cache() == -EventStore.writerCacheKiB)
        // With --peer, the export writes its record on the same connection after reading.
        let s = try BundleExport.run(store: store, to: d.file("b.bundle"), options: BundleExportOptions(peer: "hq", blockSize: 4096))
        #expect(s.manifest.eventCount == shared.head)
        #expect(try cache() == -EventStore.writerCacheKiB)
        // A failed export (the range is past the head) gives it back too.
        #expect(throws: EditLogError.self) {
            _ = try BundleExport.run(store: store, to: d.file("c.bundle"), options: BundleExportOptions(until: shared.head + 5))
        }
        #expect(try cache() == -EventStore.writerCacheKiB)
    }

    @Test func syncingABundlesDirectoryFailsNamingADirectoryItCannotOpen() throws {
        let d = TempDir()
        try BundleExport.syncDirectory(of: d.file("any.bundle"))
        // A directory that cannot be opened is an I/O error naming it, not a silent success.
        let missing = d.file("gone") + "/x.bundle"
        let e = try #require(throws: EditLogError.self) { try BundleExport.syncDirectory(of: missing) }
        #expect(e.kind == .io && e.message.contains("directory"))
        #expect(e.description.contains(d.file("gone")))
    }

    @Test func sinceLastExportContinuesWhereThePreviousStopped() throws {
        let d = TempDir()
        try shared.copyLog(to: d.file("log.sqlite"))
        let log = try EditLog.open(at: d.file("log.sqlite"))
        defer { log.close() }
        let first = try log.exportBundle(to: d.file("1.bundle"), until: .position(500), peer: "hq")
        #expect(first.manifest.fromPosition == 0 && first.manifest.toPosition == 500 && first.manifest.eventCount == 500)
        let second = try log.exportBundle(to: d.file("2.bundle"), since: .lastExport(peer: "hq"), peer: "hq")
        #expect(second.manifest.fromPosition == 500 && second.manifest.toPosition == shared.head)
        #expect(second.manifest.since == "last-export:hq")
        let tree = try Fixture.treeWithoutInspections()
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"Condition","value":"Poor"}"#, #"{"op":"finish"}"#)
        let third = try log.exportBundle(to: d.file("3.bundle"), since: .lastExport(peer: "hq"), peer: "hq")
        let newHead = try log.eventCount()
        #expect(third.manifest.fromPosition == shared.head && third.manifest.toPosition == newHead && third.manifest.eventCount > 0)
        #expect(try log.bundleExports(peer: "hq").map(\.to) == [500, shared.head, newHead])
        #expect(try log.bundleExports(peer: "hq").last?.sha256 == third.sha256)
        // The three bundles hold the whole log once, in order, and each one's first event follows the one before.
        var all: [RecordedEvent] = []
        for f in ["1", "2", "3"] { all += try BundleFixture.read(d.file("\(f).bundle")).1 }
        #expect(all == (try BundleFixture.events(log)))
        // --since bundle: starts after that bundle; a bundle of another log is refused.
        let fourth = try log.exportBundle(to: d.file("4.bundle"), since: .bundle(path: d.file("1.bundle")))
        #expect(fourth.manifest.fromPosition == 500)
        let other = try EditLog.create(at: d.file("other.sqlite"), service: [("service.json", try Fixture.json("service.json"))], logId: "other-log")
        defer { other.close() }
        expectBundleError(.invalidInput, "not from this log") { _ = try other.exportBundle(to: d.file("5.bundle"), since: .bundle(path: d.file("1.bundle"))) }
        // Nothing sent to a peer yet: from the start.
        let sixth = try log.exportBundle(to: d.file("6.bundle"), since: .lastExport(peer: "nobody"))
        #expect(sixth.manifest.fromPosition == 0 && sixth.manifest.toPosition == newHead && sixth.manifest.since == "last-export:nobody")
        #expect(!FileManager.default.fileExists(atPath: d.file("5.bundle")) && !FileManager.default.fileExists(atPath: d.file("5.bundle.partial")))
    }

    @Test func anEmptyRangeIsAnEmptyBundle() throws {
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let s = try log.exportBundle(to: d.file("empty.bundle"), since: .position(shared.head))
        #expect(s.manifest.eventCount == 0 && s.manifest.firstEventHash == nil && s.manifest.blobCount == 0)
        let (c, events, _) = try BundleFixture.read(d.file("empty.bundle"))
        #expect(events.isEmpty && c.eventCount == 0)
    }

    @Test func untilATimeAndFailuresLeaveNoFile() throws {
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let events = try BundleFixture.events(log)
        let cut = events[300]
        let s = try log.exportBundle(to: d.file("t.bundle"), until: .time(cut.recordedTime), by: .recorded)
        #expect(s.manifest.toPosition == events.last { $0.recordedTime <= cut.recordedTime }!.position)
        expectBundleError(.notFound, "beyond the last event") { _ = try log.exportBundle(to: d.file("x.bundle"), until: .position(shared.head + 1)) }
        expectBundleError(.invalidInput, "wrong way round") { _ = try log.exportBundle(to: d.file("x.bundle"), since: .position(20), until: .position(10)) }
        expectBundleError(.conflict, "already exists") { _ = try log.exportBundle(to: d.file("t.bundle")) }
        _ = try log.exportBundle(to: d.file("t.bundle"), overwrite: true)
        let left = try FileManager.default.contentsOfDirectory(atPath: d.path).sorted()
        #expect(left == ["t.bundle"])
    }

    @Test func signedBundlesVerifyAgainstTrustedKeys() throws {
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let k = try BundleSignature.generateKeyFiles(name: d.file("alice"))
        let other = try BundleSignature.generateKeyFiles(name: d.file("bob"))
        let mode = try FileManager.default.attributesOfItem(atPath: k.privatePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        expectBundleError(.conflict, "never overwritten") { _ = try BundleSignature.generateKeyFiles(name: d.file("alice")) }
        let key = try BundleSignature.readKeyFile(k.privatePath, as: .privateKey)
        _ = try log.exportBundle(to: d.file("s.bundle"), since: .position(600), signingKey: key)
        let (c, _, _) = try BundleFixture.read(d.file("s.bundle"), trust: [k.publicKey])
        #expect(c.signer == k.publicKey)
        #expect(try BundleFixture.unpack(d.file("s.bundle")).last?.name == "SHA256SUMS.sig")
        expectBundleError(.validation, "not a trusted key") { _ = try BundleFixture.read(d.file("s.bundle"), trust: [other.publicKey]) }
        expectBundleError(.validation, "not signed") { _ = try BundleFixture.read(shared.bundle, trust: [k.publicKey]) }
        // A signature over other SHA256SUMS: an entry was changed (and SHA256SUMS recomputed) after signing.
        var entries = try BundleFixture.unpack(d.file("s.bundle"))
        let sig = entries.removeLast()
        #expect(sig.name == "SHA256SUMS.sig")
        var m = try BundleFixture.json(entries[0].data).objectValue!
        m["creator"] = "mallory"
        entries[0].data = JSONValue.object(m).serializedBytes()
        try BundleFixture.pack(entries, to: d.file("tmp.bundle"))
        var forged = try BundleFixture.unpack(d.file("tmp.bundle"))
        forged.append(sig)
        try BundleFixture.pack(forged, to: d.file("forged.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "does not match SHA256SUMS") { _ = try BundleFixture.read(d.file("forged.bundle")) }
        // A signature document that is not one.
        forged[forged.count - 1].data = Array(#"{"algorithm":"ed25519","publicKey":"AAAA","signature":"AAAA"}"#.utf8)
        try BundleFixture.pack(forged, to: d.file("forged.bundle"), recomputeSums: false)
        expectBundleError(.corrupt, "publicKey") { _ = try BundleFixture.read(d.file("forged.bundle")) }
    }

    /// Key files name their kind on their first line: a public key is never read as a private one (whoever holds it
    /// could sign as that key), nor a private key as a trusted public one. Files written before the marker line are
    /// taken by their name (.key, .pub) and, where a private key is needed, refused under any other name.
    @Test func keyFilesOfTheOtherKindAreRefused() throws {
        let d = TempDir()
        let k = try BundleSignature.generateKeyFiles(name: d.file("ops"))
        let privateText = try String(contentsOfFile: k.privatePath, encoding: .utf8)
        let publicText = try String(contentsOfFile: k.publicPath, encoding: .utf8)
        #expect(privateText.hasPrefix("editlog ed25519 private key\n") && publicText == "editlog ed25519 public key\n\(Data(k.publicKey).base64EncodedString())\n")
        let key = try BundleSignature.readKeyFile(k.privatePath, as: .privateKey)
        #expect(try BundleSignature.publicKey(ofPrivate: key) == k.publicKey)
        #expect(try BundleSignature.readKeyFile(k.publicPath, as: .publicKey) == k.publicKey)
        expectBundleError(.invalidInput, "ops.pub: this is a public key file, not a private key") { _ = try BundleSignature.readKeyFile(k.publicPath, as: .privateKey) }
        expectBundleError(.invalidInput, "ops.key: this is a private key file, not a public key") { _ = try BundleSignature.readKeyFile(k.privatePath, as: .publicKey) }
        // The same files renamed: the marker line decides, not the name.
        try FileManager.default.copyItem(atPath: k.publicPath, toPath: d.file("renamed.key"))
        expectBundleError(.invalidInput, "this is a public key file") { _ = try BundleSignature.readKeyFile(d.file("renamed.key"), as: .privateKey) }
        // Unmarked files (as keys generate wrote them before): by name.
        let bare = Array(key), barePublic = k.publicKey
        func write(_ name: String, _ raw: [UInt8]) throws -> String {
            try (Data(raw).base64EncodedString() + "\n").write(toFile: d.file(name), atomically: false, encoding: .utf8)
            return d.file(name)
        }
        #expect(try BundleSignature.readKeyFile(try write("old.key", bare), as: .privateKey) == bare)
        #expect(try BundleSignature.readKeyFile(try write("old.pub", barePublic), as: .publicKey) == barePublic)
        #expect(try BundleSignature.readKeyFile(try write("alice-public", barePublic), as: .publicKey) == barePublic)
        expectBundleError(.invalidInput, "old.pub: this is a public key file") { _ = try BundleSignature.readKeyFile(d.file("old.pub"), as: .privateKey) }
        expectBundleError(.invalidInput, "old.key: this is a private key file") { _ = try BundleSignature.readKeyFile(d.file("old.key"), as: .publicKey) }
        expectBundleError(.invalidInput, "name does not end in .key") { _ = try BundleSignature.readKeyFile(d.file("alice-public"), as: .privateKey) }
        // Not key files at all.
        try "editlog ed25519 private key\n".write(toFile: d.file("empty.key"), atomically: false, encoding: .utf8)
        expectBundleError(.invalidInput, "not a key file") { _ = try BundleSignature.readKeyFile(d.file("empty.key"), as: .privateKey) }
        try "editlog ed25519 secret key\n\(Data(bare).base64EncodedString())\n".write(toFile: d.file("odd.key"), atomically: false, encoding: .utf8)
        expectBundleError(.invalidInput, "not a key file") { _ = try BundleSignature.readKeyFile(d.file("odd.key"), as: .privateKey) }
        expectBundleError(.notFound, "absent.key") { _ = try BundleSignature.readKeyFile(d.file("absent.key"), as: .privateKey) }
    }

    /// SHA256SUMS is not held while a bundle is read: a signature is checked against the list made again from the
    /// entries, or against the lines as read from the first whose hex digits are not lowercase.
    @Test func aSignatureOverAListWithUppercaseDigitsStillVerifies() throws {
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        let k = try BundleSignature.generateKeyFiles(name: d.file("k"))
        let key = try BundleSignature.readKeyFile(k.privatePath, as: .privateKey)
        _ = try log.exportBundle(to: d.file("s.bundle"), since: .position(600), signingKey: key)
        var entries = try BundleFixture.unpack(d.file("s.bundle"))
        #expect(entries.removeLast().name == "SHA256SUMS.sig")
        let i = entries.count - 1
        #expect(entries[i].name == "SHA256SUMS")
        #expect(SumsCheck.list(entries[0..<i].map { .named($0.name, EventHash.sha256($0.data)) }[...]) == entries[i].data)
        // Uppercase from the third line on; and every line.
        for from in [2, 0] {
            var lines = entries[i].data.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map(Array.init)
            #expect(lines.count == i)
            for n in from..<lines.count { lines[n] = Array(String(decoding: lines[n].prefix(64), as: UTF8.self).uppercased().utf8) + lines[n].dropFirst(64) }
            var e = entries
            e[i].data = lines.flatMap { $0 + [0x0A] }
            e.append(("SHA256SUMS.sig", try BundleSignature.sign(e[i].data, privateKey: key)))
            try BundleFixture.pack(e, to: d.file("u\(from).bundle"), recomputeSums: false)
            let (c, _, _) = try BundleFixture.read(d.file("u\(from).bundle"), trust: [k.publicKey])
            #expect(c.signer == k.publicKey)
            // The same signature over the lowercase list does not hold.
            var lower = entries
            lower.append(e.last!)
            try BundleFixture.pack(lower, to: d.file("l\(from).bundle"), recomputeSums: false)
            expectBundleError(.corrupt, "does not match SHA256SUMS") { _ = try BundleFixture.read(d.file("l\(from).bundle")) }
        }
    }
}

extension BundleTests {
    @Suite(.tags(.process)) struct ProcessTests {
        let shared = SharedBundle.shared

        @Test func systemGzipAndTarReadTheBundle() throws {
            guard BundleFixture.has("gzip"), BundleFixture.has("tar") else {
                print("skipped: gzip or tar is not installed"); return
            }
            let t = try CLI.sh("gzip -t '\(shared.bundle)'")
            #expect(t.status == 0, "\(t.stderr)")
            let l = try CLI.sh("tar -tzf '\(shared.bundle)'")
            #expect(l.status == 0, "\(l.stderr)")
            let names = l.stdout.split(separator: "\n").map(String.init)
            #expect(names.prefix(3) == ["manifest.json", "schema.json", "events/00000001.ndjson"])
            #expect(names.last == "SHA256SUMS")
            #expect(names.filter { $0.hasPrefix("blobs/") }.count == 9)
            #expect(names.allSatisfy { $0 == "manifest.json" || $0 == "schema.json" || $0 == "SHA256SUMS" || $0.hasPrefix("events/") || $0.hasPrefix("blobs/") })
            if BundleFixture.has("sha256sum") {
                let d = TempDir()
                let c = try CLI.sh("cd '\(d.path)' && tar -xzf '\(shared.bundle)' && sha256sum -c --quiet SHA256SUMS")
                #expect(c.status == 0, "\(c.stdout) \(c.stderr)")
            }
        }

        @Test func smallBlocksMakeManyMembersThatGzipAndTarStillRead() throws {
            let d = TempDir()
            let log = try EditLog.open(at: shared.log, readonly: true)
            defer { log.close() }
            let out = d.file("small.bundle")
            let s = try log.exportBundle(to: out, blockSize: 4096)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
            // The first member holds the manifest and the schema entries alone (the export fills it last); every
            // other member is one block of 4096 bytes but the last.
            let entries = try BundleFixture.unpack(out)
            let headBytes = entries.prefix(2).reduce(0) { $0 + Ustar.block + $1.data.count + Ustar.padding(for: Int64($1.data.count)) }
            #expect(entries.prefix(2).map(\.name) == [BundleLayout.manifest, BundleLayout.schema])
            let sizes = GzipWriterTests.memberSizes(bytes)
            let body = Int(s.uncompressedBytes) - headBytes
            #expect(sizes.first == headBytes)
            #expect(sizes.dropFirst().dropLast().allSatisfy { $0 == 4096 } && sizes.count == 1 + (body + 4095) / 4096,
                    "\(sizes.count) members for \(s.uncompressedBytes) bytes")
            let (c, events, _) = try BundleFixture.read(out)
            #expect(events == (try BundleFixture.events(log)))
            #expect(c.manifest.eventCount == shared.head)
            if BundleFixture.has("gzip"), BundleFixture.has("tar") {
                #expect(try CLI.sh("gzip -t '\(out)'").status == 0)
                let l = try CLI.sh("tar -tzf '\(out)'")
                #expect(l.status == 0 && l.stdout.hasPrefix("manifest.json\nschema.json\n"), "\(l.stderr)")
            } else {
                print("skipped the system-tool half: gzip or tar is not installed")
            }
        }

        @Test func zlibOnlyAndTheDefaultWriteTheSameTarThatZlibReads() throws {
            let d = TempDir()
            let log = try EditLog.open(at: shared.log, readonly: true)
            defer { log.close() }
            let auto = try log.exportBundle(to: d.file("auto.bundle"), blockSize: 8192)
            let zlib = try log.exportBundle(to: d.file("zlib.bundle"), blockSize: 8192, deflate: .zlib)
            #expect(zlib.deflater == "zlib level 6, deflateTune(32, 258, 24, 10)")
            #expect(auto.deflater == BundleDeflate.auto.deflater)
            // The same entries, byte for byte; only the deflated bytes differ (where libdeflate wrote the default).
            #expect(zlib.uncompressedBytes == auto.uncompressedBytes)
            let a = try BundleFixture.unpack(d.file("auto.bundle")), z = try BundleFixture.unpack(d.file("zlib.bundle"))
            #expect(a.map(\.name) == z.map(\.name))
            let differing = zip(a, z).filter { pair in pair.0.data != pair.1.data }.map { pair in pair.0.name }
            #expect(Set(differing).isSubset(of: [BundleLayout.manifest, BundleLayout.sums]), "\(differing)")
            #expect(try BundleFixture.read(d.file("zlib.bundle")).1 == (try BundleFixture.events(log)))
            if Libdeflate.system != nil {
                #expect(auto.deflater.hasPrefix("libdeflate") && auto.bytes != zlib.bytes)
                #expect(try BundleDeflate.libdeflate.engine() == .libdeflate(level: GzipEngine.libdeflateLevel))
            } else {
                let e = try #require(throws: EditLogError.self) { _ = try log.exportBundle(to: d.file("ld.bundle"), deflate: .libdeflate) }
                #expect(e.kind == .unsupported && e.message.contains("libdeflate.so.0"))
                #expect(!FileManager.default.fileExists(atPath: d.file("ld.bundle")) && !FileManager.default.fileExists(atPath: d.file("ld.bundle.partial")))
            }
            if BundleFixture.has("gzip") { #expect(try CLI.sh("gzip -t '\(d.file("zlib.bundle"))'").status == 0) }
        }

        @Test func layerFilterKeepsThatLayerAndSystemStreamsWithCheckableHashes() throws {
            let d = TempDir()
            let log = try EditLog.open(at: shared.log, readonly: true)
            defer { log.close() }
            let trees = try log.layer("Trees").id
            let s = try log.exportBundle(to: d.file("trees.bundle"), since: .position(100), layers: ["Trees"])
            #expect(s.manifest.layers == ["Trees"])
            let (c, events, blobs) = try BundleFixture.read(d.file("trees.bundle"))
            let expected = try BundleFixture.events(log).filter { $0.position > 100 && ($0.stream.hasPrefix("$") || StreamName.parseFeature($0.stream)?.layer == trees) }
            #expect(events == expected)
            #expect(c.eventCount == expected.count && c.eventCount < Int(shared.head - 100))
            #expect(Set(blobs.keys) == Set(expected.flatMap(\.blobReferences)))
            // Continuing after a bundle of some layers is for the same layers only: the others' events of its range were
            // never sent. A peer's mark is never set by one (the next last-export: would skip them the same way).
            let next = try log.exportBundle(to: d.file("next.bundle"), since: .bundle(path: d.file("trees.bundle")), layers: ["Trees"])
            #expect(next.manifest.fromPosition == s.manifest.toPosition)
            expectBundleError(.invalidInput, "the other layers' events of that range unsent") {
                _ = try log.exportBundle(to: d.file("all.bundle"), since: .bundle(path: d.file("trees.bundle")))
            }
            try shared.copyLog(to: d.file("log.sqlite"))
            let writable = try EditLog.open(at: d.file("log.sqlite"))
            defer { writable.close() }
            expectBundleError(.invalidInput, "is not recorded for peer hq") {
                _ = try writable.exportBundle(to: d.file("peer.bundle"), layers: ["Trees"], peer: "hq")
            }
            #expect(try writable.bundleExports(peer: "hq").isEmpty)
            for f in ["all.bundle", "all.bundle.partial", "peer.bundle", "peer.bundle.partial"] { #expect(!FileManager.default.fileExists(atPath: d.file(f)), "\(f)") }
            let cli = try CLI.run("bundle", "export", d.file("log.sqlite"), "--out", d.file("peer.bundle"), "--layer", "Trees", "--peer", "hq")
            #expect(cli.status == 64 && cli.stderr.contains("--peer hq with --layer"), "\(cli.stderr)")
        }
    }
}
