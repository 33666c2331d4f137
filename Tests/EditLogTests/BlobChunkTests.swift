@testable import EditLogBundle
import EditLog
import EditLogStore
import Foundation
import GRDB
import Testing

/// Attachments larger than `BlobStorage.inlineLimit` are stored in chunks and travel through bundles piece by piece
/// (the export, the import and both verifies never hold one whole); the store's checks cover the chunks as they
/// cover inline blobs.
@Suite struct BlobChunkTests {
    /// Bytes that do not compress, the same for the same seed (xorshift64).
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var x = seed | 1
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            var i = 0
            while i < count {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                withUnsafeBytes(of: x) { w in for b in w where i < count { raw[i] = b; i += 1 } }
            }
        }
        return out
    }

    /// Two chunks and a bit past the inline limit: nine chunks, the last one short.
    static let size = Int(BlobStorage.inlineLimit) * 2 + 12_345

    /// Records a new tree with `bytes` attached; returns the bytes' SHA-256 (hex).
    @discardableResult
    static func attach(_ log: EditLog, _ bytes: [UInt8], tree n: Int) throws -> String {
        var cmds = try script([
            #"{"op":"create","layer":"Trees","globalId":"\#(newGID(n))","session":"big-\#(n)","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
            #"{"op":"attach","attachmentId":"\#(newGID(n + 1))","name":"scan-\#(n).tif","contentType":"image/tiff","dataBase64":"AAEC","session":"big-\#(n)"}"#,
            #"{"op":"finish","session":"big-\#(n)"}"#,
        ])
        // The script's placeholder bytes replaced: a base64 line of megabytes would only slow the test.
        guard case .attach(let id, let name, let type, _, let preferred) = cmds[1].op else { preconditionFailure() }
        cmds[1].op = .attach(attachmentId: id, name: name, contentType: type, data: bytes, preferredSize: preferred)
        _ = try log.record(cmds, name: "big-\(n)", sha256: Hex.encode(EventHash.sha256(Array("big-\(n)".utf8))), allowRepeat: true)
        return Hex.encode(EventHash.sha256(bytes))
    }

    /// The stored rows of a blob: its `blobs` row's size and inline byte count, and its chunks (number, bytes).
    static func rows(_ path: String, _ sha: String) throws -> (size: Int64, inline: Int, chunks: [(Int64, Data)]) {
        try RawLog.read(path) { db in
            let key = Data(Hex.decode(sha)!)
            let row = try #require(try Row.fetchOne(db, sql: "SELECT size, length(data) FROM blobs WHERE sha256 = ?", arguments: [key]))
            let chunks = try Row.fetchAll(db, sql: "SELECT seq, data FROM blob_chunks WHERE sha256 = ? ORDER BY seq", arguments: [key]).map { ($0[0] as Int64, $0[1] as Data) }
            return (row[0], row[1], chunks)
        }
    }

    /// The sizes around the limits: stored inline up to `inlineLimit`, in chunks above (no empty last chunk), the same
    /// rows after a bundle's round trip, and the same bytes.
    @Test func sizesAroundTheLimitsAreStoredAndCarriedExactly() throws {
        let d = TempDir()
        let chunk = BlobStorage.chunkBytes, inline = Int(BlobStorage.inlineLimit)
        let sizes = [1, chunk - 1, chunk, chunk + 1, inline, inline + 1, 2 * inline]
        let a = try Fixture.treesLog(at: d.file("a.sqlite"), logId: "log-a")
        var shas: [(Int, String)] = []
        for (i, n) in sizes.enumerated() { shas.append((n, try Self.attach(a, Self.noise(n, seed: UInt64(100 + i)), tree: 200 + 10 * i))) }
        _ = try a.exportBundle(to: d.file("a.bundle"))
        let b = try Fixture.treesLog(at: d.file("b.sqlite"), seed: 2, logId: "log-b")
        _ = try b.importBundle(at: d.file("a.bundle"), actor: "op", device: "hub")
        for (i, (n, sha)) in shas.enumerated() {
            let bytes = Self.noise(n, seed: UInt64(100 + i))
            for path in ["a.sqlite", "b.sqlite"] {
                let r = try Self.rows(d.file(path), sha)
                let chunked = n > inline
                #expect(r.size == Int64(n) && r.inline == (chunked ? 0 : n), "\(path) \(n)")
                #expect(r.chunks.count == (chunked ? (n + chunk - 1) / chunk : 0), "\(path) \(n)")
                #expect(r.chunks.allSatisfy { !$0.1.isEmpty }, "\(path) \(n)")
            }
            #expect(try b.blob(sha256: sha) == bytes, "\(n)")
            #expect(try b.blobLayout(sha256: sha)?.pieces == (n > inline ? (n + chunk - 1) / chunk : 1))
        }
        #expect(try b.verify().ok)
    }

    /// A large blob whose bytes in the bundle are not its name's fails at its last piece: nothing of it, or of the
    /// import, is written.
    @Test func aLargeBlobWithOtherBytesIsRefusedAndTheLogIsUnchanged() throws {
        let d = TempDir()
        let bytes = Self.noise(Self.size, seed: 9)
        let a = try Fixture.treesLog(at: d.file("a.sqlite"), logId: "log-a")
        let sha = try Self.attach(a, bytes, tree: 100)
        _ = try a.exportBundle(to: d.file("a.bundle"))
        try BundleFixture.edit(d.file("a.bundle"), to: d.file("bad.bundle")) { entries in
            let i = try #require(entries.firstIndex { $0.name == "blobs/" + sha })
            entries[i].data[entries[i].data.count - 3] ^= 0x10
        }
        let b = try Fixture.treesLog(at: d.file("b.sqlite"), seed: 2, logId: "log-b")
        b.close()
        let before = BundleImportTests.fileBytes(d.file("b.sqlite"))
        let reopened = try EditLog.open(at: d.file("b.sqlite"))
        expectBundleError(.corrupt, "not its name") { _ = try reopened.importBundle(at: d.file("bad.bundle"), actor: "op", device: "hub") }
        reopened.close()
        #expect(BundleImportTests.fileBytes(d.file("b.sqlite")) == before, "the log is byte-identical")
        #expect(try RawLog.read(d.file("b.sqlite")) { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM blob_chunks") } == 0)
        expectBundleError(.corrupt, "not its name") { _ = try EditLog.verifyBundle(at: d.file("bad.bundle")) }

        // Chunks of this blob written into the log outside EditLog, before it is imported: refused, naming them.
        try RawLog.write(d.file("b.sqlite")) { db in
            try db.execute(sql: "INSERT INTO blob_chunks (sha256, seq, data) VALUES (x'\(sha)', 0, x'01')")
        }
        let strayed = try EditLog.open(at: d.file("b.sqlite"))
        expectBundleError(.corrupt, "the log holds chunks of attachment bytes \(sha) that no blob lists") {
            _ = try strayed.importBundle(at: d.file("a.bundle"), actor: "op", device: "hub")
        }
        strayed.close()
    }

    @Test func aChangedOrMissingChunkIsFoundByVerifyAndStopsAnExport() throws {
        let d = TempDir()
        let a = try Fixture.treesLog(at: d.file("a.sqlite"), logId: "log-a")
        let sha = try Self.attach(a, Self.noise(Self.size, seed: 11), tree: 100)
        a.close()
        let key = "x'\(sha)'"
        /// A copy of the log changed by `sql`: `verify` names `problem`, and an export refuses with `message`, leaving
        /// no file.
        func expectFound(_ name: String, _ sql: String, verify problem: String, export message: String) throws {
            let path = d.file(name + ".sqlite")
            try FileManager.default.copyItem(atPath: d.file("a.sqlite"), toPath: path)
            try RawLog.writeWithoutTransaction(path) { db in try db.execute(sql: sql) }
            let r = try EditLog.verify(at: path)
            #expect(!r.ok && r.problems.contains { $0.contains(problem) }, "\(name): \(r.problems)")
            let log = try EditLog.open(at: path, readonly: true)
            expectBundleError(.corrupt, message) { _ = try log.exportBundle(to: d.file(name + ".bundle")) }
            log.close()
            #expect(!FileManager.default.fileExists(atPath: d.file(name + ".bundle")), "\(name)")
        }
        let size = Self.size, eight = 8 * BlobStorage.chunkBytes
        try expectFound("changed", """
            DROP TRIGGER blob_chunks_append_only_update;
            UPDATE blob_chunks SET data = CAST(substr(data, 1, 99) || x'00' || substr(data, 101) AS BLOB) WHERE sha256 = \(key) AND seq = 3;
            """, verify: "blob \(sha) does not match its content", export: "does not have that SHA-256")
        try expectFound("short", "DROP TRIGGER blob_chunks_append_only_delete; DELETE FROM blob_chunks WHERE sha256 = \(key) AND seq = 8;",
                        verify: "\(eight) bytes of \(size)", export: "holds \(eight) of the \(size) bytes the log lists")
        try expectFound("long", "DROP TRIGGER blob_chunks_append_only_update; UPDATE blob_chunks SET data = CAST(data || x'00' AS BLOB) WHERE sha256 = \(key) AND seq = 8;",
                        verify: "\(size + 1) bytes of \(size)", export: "holds more than the \(size) bytes the log lists")
        try expectFound("swapped", """
            DROP TRIGGER blob_chunks_append_only_update;
            UPDATE blob_chunks SET seq = 100 WHERE sha256 = \(key) AND seq = 1;
            UPDATE blob_chunks SET seq = 1 WHERE sha256 = \(key) AND seq = 2;
            UPDATE blob_chunks SET seq = 2 WHERE sha256 = \(key) AND seq = 100;
            """, verify: "blob \(sha) does not match its content", export: "does not have that SHA-256")

        // Values of other types, which read otherwise through other paths: reported, refused, never a crash.
        try expectFound("sizeText", "DROP TRIGGER blobs_append_only_update; UPDATE blobs SET size = 'abc' WHERE sha256 = \(key);",
                        verify: "is not as EditLog writes it (its size is stored as text", export: "its size is not a byte count")
        try expectFound("seqReal", "DROP TRIGGER blob_chunks_append_only_update; UPDATE blob_chunks SET seq = 3.5 WHERE sha256 = \(key) AND seq = 3;",
                        verify: "not all integer-numbered blobs", export: "a chunk's number or bytes have another type")
        try expectFound("dataText", "DROP TRIGGER blob_chunks_append_only_update; UPDATE blob_chunks SET data = CAST(data AS TEXT) WHERE sha256 = \(key) AND seq = 4;",
                        verify: "not all integer-numbered blobs", export: "a chunk's number or bytes have another type")
        // The right bytes in other chunks (an extra empty one; cut elsewhere): they still export, but verify says the
        // layout is not EditLog's.
        for (name, sql) in [("extraEmpty", "INSERT INTO blob_chunks (sha256, seq, data) VALUES (\(key), 9, x'')"),
                            ("resplit", """
                                DROP TRIGGER blob_chunks_append_only_update;
                                UPDATE blob_chunks SET data = CAST(data || substr((SELECT data FROM blob_chunks WHERE sha256 = \(key) AND seq = 1), 1, 1000) AS BLOB) WHERE sha256 = \(key) AND seq = 0;
                                UPDATE blob_chunks SET data = CAST(substr(data, 1001) AS BLOB) WHERE sha256 = \(key) AND seq = 1;
                                """)] {
            let path = d.file(name + ".sqlite")
            try FileManager.default.copyItem(atPath: d.file("a.sqlite"), toPath: path)
            try RawLog.writeWithoutTransaction(path) { db in try db.execute(sql: sql) }
            let r = try EditLog.verify(at: path)
            #expect(!r.ok && r.problems.contains { $0.contains("is not stored as EditLog writes it") }, "\(name): \(r.problems)")
        }

        // A chunk of no blob.
        try FileManager.default.copyItem(atPath: d.file("a.sqlite"), toPath: d.file("stray.sqlite"))
        try RawLog.write(d.file("stray.sqlite")) { db in
            try db.execute(sql: "INSERT INTO blob_chunks (sha256, seq, data) VALUES (zeroblob(32), 0, x'01')")
        }
        let stray = try EditLog.verify(at: d.file("stray.sqlite"))
        #expect(!stray.ok && stray.problems.contains { $0.contains("1 blob chunk(s) belong to no blob stored in chunks") }, "\(stray.problems)")
        #expect(try EditLog.verify(at: d.file("a.sqlite")).ok)
    }
}

extension BlobChunkTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func aLargeAttachmentIsStoredInChunksAndTravelsWholeThroughABundle() throws {
            let d = TempDir()
            let bytes = BlobChunkTests.noise(BlobChunkTests.size, seed: 7)
            let a = try Fixture.treesLog(at: d.file("a.sqlite"), logId: "log-a")
            let small = BlobChunkTests.noise(1_000, seed: 8)
            // Inline, but more than one piece of a bundle's reader: stored whole after its pieces.
            let middle = BlobChunkTests.noise(BlobStorage.chunkBytes * 2 + 77, seed: 10)
            let sha = try BlobChunkTests.attach(a, bytes, tree: 100)
            let smallSha = try BlobChunkTests.attach(a, small, tree: 110)
            let middleSha = try BlobChunkTests.attach(a, middle, tree: 130)
            #expect(try a.blob(sha256: sha) == bytes)
            #expect(try a.blob(sha256: smallSha) == small)
            #expect(try a.verify().ok)

            let stored = try BlobChunkTests.rows(d.file("a.sqlite"), sha)
            #expect(stored.size == Int64(bytes.count) && stored.inline == 0)
            #expect(stored.chunks.map(\.0) == Array(0..<9))
            #expect(stored.chunks.dropLast().allSatisfy { $0.1.count == BlobStorage.chunkBytes })
            #expect(stored.chunks.reduce(Data()) { $0 + $1.1 } == Data(bytes))
            let inline = try BlobChunkTests.rows(d.file("a.sqlite"), smallSha)
            #expect(inline.inline == small.count && inline.chunks.isEmpty)

            // Exported piece by piece: the bundle holds the bytes; its reader hands them over in pieces of a chunk at most.
            _ = try a.exportBundle(to: d.file("a.bundle"))
            var pieces = 0, largest = 0
            _ = try BundleReader(path: d.file("a.bundle")).read(event: { _ in }, blob: { p in
                if p.shaText == sha { pieces += 1; largest = max(largest, p.bytes.count) }
            })
            #expect(pieces == 9 && largest == BlobStorage.chunkBytes)
            let (contents, _, blobs) = try BundleFixture.read(d.file("a.bundle"))
            #expect(blobs[sha] == bytes && blobs[smallSha] == small && blobs[middleSha] == middle)
            #expect(contents.manifest.blobBytes >= Int64(bytes.count + small.count + middle.count))
            if BundleFixture.has("tar") {
                let t = try CLI.sh("tar -xzOf '\(d.file("a.bundle"))' blobs/\(sha) | sha256sum")
                #expect(t.status == 0 && t.stdout.hasPrefix(sha), "\(t.stdout)\(t.stderr)")
            }

            // Imported: the same bytes in the same chunks; a second import stores nothing.
            let b = try Fixture.treesLog(at: d.file("b.sqlite"), seed: 2, logId: "log-b")
            let first = try b.importBundle(at: d.file("a.bundle"), actor: "op", device: "hub").report
            #expect(first.blobs >= 3)
            #expect(try b.blob(sha256: sha) == bytes && b.blob(sha256: middleSha) == middle)
            let middleRows = try BlobChunkTests.rows(d.file("b.sqlite"), middleSha)
            #expect(middleRows.inline == middle.count && middleRows.chunks.isEmpty)
            let copied = try BlobChunkTests.rows(d.file("b.sqlite"), sha)
            #expect(copied.size == stored.size && copied.inline == 0 && copied.chunks.map(\.0) == stored.chunks.map(\.0))
            #expect(copied.chunks.map(\.1) == stored.chunks.map(\.1))
            #expect(try b.verify().ok)
            let again = try b.importBundle(at: d.file("a.bundle"), actor: "op", device: "hub").report
            #expect(again.blobs == 0 && again.imported == 0)

            // And on: b's own bundle carries the same bytes.
            _ = try b.exportBundle(to: d.file("b.bundle"))
            #expect(try BundleFixture.read(d.file("b.bundle")).2[sha] == bytes)
        }

        /// A log made before the chunk table existed (and so before the cascade and baseline indexes, `v4`, `v5`) is read and
        /// verified as it is where it is opened read-only (nothing written), gets both at its first read-write open, and
        /// stays valid.
        @Test func aLogFromBeforeTheChunkTableIsReadAsItIsAndMigratedWhenWritten() throws {
            let d = TempDir()
            let a = try Fixture.treesLog(at: d.file("old.sqlite"), logId: "log-old")
            let smallSha = try BlobChunkTests.attach(a, BlobChunkTests.noise(2_000, seed: 12), tree: 120)
            a.close()
            try RawLog.write(d.file("old.sqlite")) { db in
                try db.execute(sql: """
                    DROP TABLE blob_chunks; DROP INDEX events_cascade; DROP INDEX events_baseline;
                    DELETE FROM grdb_migrations WHERE identifier IN ('v3-blob-chunks', 'v4-cascade-index', 'v5-baseline-index')
                    """)
            }
            func hasChunkTable() throws -> Bool { try RawLog.read(d.file("old.sqlite")) { try $0.tableExists("blob_chunks") } }
            func hasCascadeIndex() throws -> Bool {
                try RawLog.read(d.file("old.sqlite")) { try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_cascade'") == 1 }
            }
            let reader = try EditLog.open(at: d.file("old.sqlite"), readonly: true)
            #expect(try reader.blob(sha256: smallSha) == BlobChunkTests.noise(2_000, seed: 12))
            #expect(try reader.verify().ok)
            reader.close()
            let report = try EditLog.verify(at: d.file("old.sqlite"))
            #expect(report.ok, "\(report.problems)")
            #expect(try !hasChunkTable() && !hasCascadeIndex(), "a read-only open writes nothing")
            // An export not recorded for a peer writes nothing to the log either.
            let export = try CLI.run("bundle", "export", d.file("old.sqlite"), "--out", d.file("old.bundle"))
            #expect(export.status == 0, "\(export.stderr)")
            #expect(try !hasChunkTable(), "an export without --peer writes nothing")
            // A blob listed as chunked in a log without chunks is found, not a crash.
            try FileManager.default.copyItem(atPath: d.file("old.sqlite"), toPath: d.file("odd.sqlite"))
            try RawLog.write(d.file("odd.sqlite")) { db in
                try db.execute(sql: "INSERT INTO blobs (sha256, size, data) VALUES (zeroblob(32), 5000000, x'')")
            }
            let odd = try EditLog.verify(at: d.file("odd.sqlite"))
            #expect(!odd.ok && odd.problems.contains { $0.contains("empty, listed as 5000000 bytes") }, "\(odd.problems)")

            let migrated = try EditLog.open(at: d.file("old.sqlite"))
            #expect(try hasChunkTable() && hasCascadeIndex())
            let bytes = BlobChunkTests.noise(BlobChunkTests.size, seed: 13)
            let sha = try BlobChunkTests.attach(migrated, bytes, tree: 100)
            #expect(try migrated.blob(sha256: sha) == bytes)
            #expect(try migrated.verify().ok)
        }
    }
}
