import EditLogCore
import EditLogStore
import Foundation
import GRDB

/// What `bundle export` wrote.
public struct BundleExportSummary: Sendable {
    public let path: String
    public let manifest: BundleManifest
    /// The bundle file's size and SHA-256 (hex).
    public let bytes: Int64
    public let sha256: String
    public let uncompressedBytes: Int64
    /// Blobs the events reference that this log does not hold (left out of the bundle).
    public let missingBlobs: [String]
    /// The peer the export was recorded for (`--peer`).
    public let peer: String?
    /// What deflated the members ("libdeflate level 5 (libdeflate.so.0)", "zlib level 6, deflateTune(…)").
    public let deflater: String

    public var json: JSONValue {
        .object([
            "path": .string(path), "manifest": manifest.json, "bytes": .int(bytes), "sha256": .string(sha256),
            "uncompressedBytes": .int(uncompressedBytes), "missingBlobs": .array(missingBlobs.map { .string($0) }), "peer": JSONValue(peer),
            "deflater": .string(deflater),
        ])
    }
}

/// How to export.
public struct BundleExportOptions: Sendable {
    public var since: BundleSince
    /// The last position to include (nil: the head).
    public var until: Int64?
    /// Feature layers to keep (ids), with the names given (for the manifest). nil: every event.
    public var layers: (ids: Set<Int>, names: [String])?
    /// Record the export for `--since last-export:<peer>`.
    public var peer: String?
    /// A raw Ed25519 private key to sign SHA256SUMS with.
    public var signingKey: [UInt8]?
    public var overwrite: Bool
    /// The user named in `creator`, when known.
    public var user: String?
    /// Uncompressed bytes per gzip member (tests force small ones).
    public var blockSize: Int
    /// The library that deflates the members (the format is the same whichever does).
    public var deflate: BundleDeflate

    public init(since: BundleSince = .position(0), until: Int64? = nil, layers: (ids: Set<Int>, names: [String])? = nil, peer: String? = nil,
                signingKey: [UInt8]? = nil, overwrite: Bool = false, user: String? = BundleExport.currentUser(),
                blockSize: Int = BundleLayout.gzipBlockBytes, deflate: BundleDeflate = .auto) {
        self.since = since; self.until = until; self.layers = layers; self.peer = peer; self.signingKey = signingKey
        self.overwrite = overwrite; self.user = user; self.blockSize = blockSize; self.deflate = deflate
    }
}

/// Reads a store and writes a bundle: two passes over the range in one read transaction (the first counts and
/// finds the blobs for the manifest, which comes first; the second writes), so nothing is held whole.
public enum BundleExport {
    /// Who runs this process: `$USER`, else `$LOGNAME`, else the account of the effective user id (cron, systemd and
    /// containers often set neither variable); nil only when none names one.
    public static func currentUser() -> String? {
        let env = ProcessInfo.processInfo.environment
        if let u = env["USER"] ?? env["LOGNAME"], !u.isEmpty { return u }
        guard let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name else { return nil }
        let s = String(cString: name)
        return s.isEmpty ? nil : s
    }

    /// The position a `--since` names in this store, for an export of `layers` (given names; nil: every layer; and
    /// their ids, `layerIds`). A bundle of some layers only is no place to continue from but for the same layers: the
    /// other layers' events of its range were never sent. A bundle is read and checked whole first, as `bundle verify`
    /// does, and its last event must be this log's event at that position: a manifest edited to end later would skip
    /// the events between (the export starts after its `toPosition`).
    public static func resolve(_ since: BundleSince, store: EventStore, layers: [String]? = nil, layerIds: Set<Int>? = nil) throws(EditLogError) -> Int64 {
        switch since {
        case .position(let p):
            return p
        case .lastExport(let peer):
            let p = try store.read { db in
                try Int64.fetchOne(db, sql: "SELECT to_position FROM bundle_exports WHERE peer = ? ORDER BY id DESC LIMIT 1", arguments: [peer])
            }
            // Nothing sent to that peer yet: from the start (the manifest's `since` still names the peer).
            return p ?? 0
        case .bundle(let path):
            let reader = try BundleReader(path: path)
            let manifest = reader.manifest
            guard manifest.originLogId == store.logId else {
                throw EditLogError(.invalidInput, "the bundle was exported from log \(manifest.originLogId), not from this log (\(store.logId)); --since bundle: needs a bundle of this log", at: path)
            }
            if let kept = manifest.layers, kept.sorted() != (layers ?? []).sorted() {
                throw EditLogError(.invalidInput, "the bundle holds only layers \(kept.joined(separator: ", ")) of positions \(manifest.fromPosition + 1)...\(manifest.toPosition): "
                                   + "continuing after it would leave the other layers' events of that range unsent; give the same --layer, or --since \(manifest.fromPosition)", at: path)
            }
            try checkSince(reader, store: store, layerIds: layerIds)
            return manifest.toPosition
        }
    }

    /// Reads the whole bundle `--since bundle:` names (every check of `bundle verify`), then checks it against this
    /// log: its range ends at or before the head, its last event is this log's event at that position (hash for
    /// hash), and, for a bundle of some layers, no event of those layers comes after its last one up to `toPosition`.
    static func checkSince(_ reader: BundleReader, store: EventStore, layerIds: Set<Int>?) throws(EditLogError) {
        let path = reader.path, manifest = reader.manifest
        var last: (position: Int64, hash: [UInt8])?
        do { _ = try reader.read(event: { last = ($0.position, $0.hash) }, blob: { _ in }) } catch {
            var e = error
            e.message = "--since bundle: the bundle does not verify (editlog bundle verify), so where it ends is not known: " + e.message
            throw e
        }
        let head = try store.read { db in try EventReading.count(db) }
        guard manifest.toPosition <= head else {
            throw EditLogError(.invalidInput, "the bundle's range ends at position \(manifest.toPosition), after this log's last event (\(head)): "
                               + "--since bundle: needs a bundle of this log's events", at: path)
        }
        if let last {
            let ours = try store.read { db in try Data.fetchOne(db, sql: "SELECT hash FROM events WHERE position = ?", arguments: [last.position]) }
            guard let ours, [UInt8](ours) == last.hash else {
                throw EditLogError(.invalidInput, "the bundle's last event, at position \(last.position), has hash \(Hex.encode(last.hash)); this log's event "
                                   + "there has \(ours.map { Hex.encode([UInt8]($0)) } ?? "none"): the bundle holds other events than this log "
                                   + "(a copy of the log that went its own way?); --since bundle: needs a bundle of this log's events", at: path)
            }
        }
        // A bundle of some layers holds every event of them in its range: one after its last event is one it should hold.
        if manifest.layers != nil, let layerIds {
            let after = last?.position ?? manifest.fromPosition
            let missed = try store.read { db -> (position: Int64, stream: String)? in
                let rows = try Row.fetchCursor(db, sql: "SELECT position, stream FROM events WHERE position > ? AND position <= ? ORDER BY position",
                                               arguments: [after, manifest.toPosition])
                while let row = try rows.next() {
                    let stream: String = row[1]
                    if keeps(stream: stream, layers: layerIds) { return (row[0], stream) }
                }
                return nil
            }
            if let missed {
                throw EditLogError(.invalidInput, "the bundle's range ends at position \(manifest.toPosition), but this log's event at position "
                                   + "\(missed.position) (\(missed.stream)) is of its layers and not in it: the manifest's toPosition is not where "
                                   + "the bundle ends", at: path)
            }
        }
    }

    public static func run(store: EventStore, to out: String, options: BundleExportOptions,
                           progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleExportSummary {
        if !options.overwrite && FileManager.default.fileExists(atPath: out) {
            throw EditLogError(.conflict, "\(out) already exists; pass --force to replace it", at: out)
        }
        if let peer = options.peer, let layers = options.layers {
            throw EditLogError(.invalidInput, "an export of layers \(layers.names.joined(separator: ", ")) is not recorded for peer \(peer): the next "
                               + "last-export:\(peer) would start after it and the other layers' events of its range would never be sent; "
                               + "export every layer to a peer, or leave out --peer")
        }
        let engine = try options.deflate.engine()
        let from = try resolve(options.since, store: store, layers: options.layers?.names, layerIds: options.layers?.ids)
        let partial = out + ".partial"
        do throws(EditLogError) {
            let (manifest, written, missing) = try store.read { db in
                try write(db, store: store, from: from, to: partial, options: options, engine: engine, progress: progress)
            }
            if rename(partial, out) != 0 {
                throw EditLogError(.io, "cannot move the bundle into place: \(String(cString: strerror(errno)))", at: out)
            }
            let sha = Hex.encode(written.sha256)
            // A failure from here leaves no bundle behind: the command fails as a whole.
            do throws(EditLogError) {
                // The rename made durable before the peer's mark moves past the bundle: after a power cut, a recorded
                // export always has its file (the file's bytes were synced before the rename).
                try syncDirectory(of: out)
                if let peer = options.peer {
                    try store.write { db, _ in
                        try db.execute(sql: "INSERT INTO bundle_exports (peer, from_position, to_position, bundle_sha256, created_at) VALUES (?, ?, ?, ?, ?)",
                                       arguments: [peer, manifest.fromPosition, manifest.toPosition, sha, manifest.createdAt])
                    }
                }
            } catch {
                try? FileManager.default.removeItem(atPath: out)
                throw error
            }
            return BundleExportSummary(path: out, manifest: manifest, bytes: written.bytes, sha256: sha, uncompressedBytes: written.uncompressed,
                                       missingBlobs: missing, peer: options.peer, deflater: engine.description)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
    }

    struct Written { let sha256: [UInt8]; let bytes: Int64; let uncompressed: Int64 }

    /// Syncs the directory holding `path`, so a rename into it survives a power cut.
    static func syncDirectory(of path: String) throws(EditLogError) {
        let dir = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw EditLogError(.io, "cannot open the bundle's directory to sync it: \(String(cString: strerror(errno)))", at: dir) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw EditLogError(.io, "cannot sync the bundle's directory: \(String(cString: strerror(errno)))", at: dir) }
    }

    static let sha256Key: [UInt8] = Array("\"sha256\"".utf8)

    /// Whether the bytes hold `"sha256"` (a key every blob reference has). A loop of its own: the standard
    /// library's generic `firstRange(of:)` slowed the whole export noticeably.
    static func mentionsSHA256(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let n = sha256Key.count
        guard bytes.count >= n else { return false }
        var i = 0
        while i <= bytes.count - n {
            if bytes[i] == 0x22, bytes[i + 1] == 0x73, sha256Key.withUnsafeBytes({ memcmp(bytes.baseAddress! + i, $0.baseAddress!, n) == 0 }) { return true }
            i += 1
        }
        return false
    }

    /// The page cache of the export's connection while it reads, in KiB: the export reads each page of its range once
    /// (twice for the manifest's blobs), in order, so a larger cache holds pages that are never read again, and the
    /// connection's own (16 MiB on a writing one) only adds to the export's peak RSS; 2 MiB is SQLite's default.
    static let readCacheKiB = 2_048

    /// Whether an event of `stream` goes in a bundle of `layers` (nil: every event); log streams (`$...`) always do.
    static func keeps(stream: String, layers: Set<Int>?) -> Bool {
        guard let layers else { return true }
        if stream.hasPrefix("$") { return true }
        return StreamName.parseFeature(stream).map { layers.contains($0.layer) } ?? false
    }

    static func write(_ db: Database, store: EventStore, from: Int64, to path: String, options: BundleExportOptions, engine: GzipEngine,
                      progress: ((Int64, Int64) -> Void)?) throws -> (BundleManifest, Written, [String]) {
        let cache = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -readCacheKiB
        try db.execute(sql: "PRAGMA cache_size = -\(readCacheKiB)")
        defer { try? db.execute(sql: "PRAGMA cache_size = \(cache)") }
        let head = try EventReading.count(db)
        let until = options.until ?? head
        guard until <= head else { throw EditLogError(.notFound, "position \(until) is beyond the last event (\(head))", at: store.path) }
        guard from <= head else { throw EditLogError(.notFound, "--since position \(from) is beyond the last event (\(head))", at: store.path) }
        guard from <= until else {
            throw EditLogError(.invalidInput, "the range is empty the wrong way round: --since is position \(from), after --until \(until)", at: store.path)
        }
        // schema.json: the schema in force at the bundle's end (the log's newest own schema event up to `until`).
        guard let schemaEvent = try EventReading.ownSchemaEvent(db, atOrBefore: until) else {
            throw EditLogError(.corrupt, "the log has no schema event", at: store.path)
        }
        let layers = options.layers?.ids
        // The hash of the event before `from + 1` (the genesis hash before position 1).
        var previous = from == 0 ? EventHash.genesis
            : try Data.fetchOne(db, sql: "SELECT hash FROM events WHERE position = ?", arguments: [from]).map { [UInt8]($0) } ?? EventHash.genesis

        // Pass 1 (what the manifest says) runs beside pass 2 (the events), and the manifest goes in last.
        let scan = ExportScan(store: store, from: from, until: until, layers: layers)
        defer { scan.join() }
        let now = store.clock.now()
        var found: (manifest: BundleManifest, count: Int64, present: [(String, Int64)], missing: [String])?
        let makeHead = { (wait: Bool) throws(EditLogError) -> (manifest: [UInt8], schema: [UInt8])? in
            guard let pass = try scan.result(wait: wait) else { return nil }
            var present: [(String, Int64)] = []
            var missing: [String] = []
            do {
                for sha in pass.blobs {
                    let size = try Hex.decode(sha).flatMap { $0.count == 32 ? try BlobReading.size(db, sha256: $0) : nil }
                    guard let size else { missing.append(sha); continue }
                    // A tar entry holds at most 8 GiB (and the manifest's sum stays far from overflowing).
                    guard size <= Ustar.maxSize else {
                        throw EditLogError(.invalidInput, "attachment bytes \(sha) are \(size) bytes, more than a bundle entry can hold (8 GiB)", at: store.path)
                    }
                    present.append((sha, size))
                }
            } catch let e as EditLogError { throw e.location == nil ? e.at(store.path) : e } catch { throw EditLogError.wrapping(error, at: store.path) }
            let manifest = BundleManifest(
                originLogId: store.logId, schemaFingerprint: SchemaFingerprint.of(schemaEvent), fromPosition: from,
                toPosition: until, eventCount: pass.count, firstEventHash: pass.firstHash.map(Hex.encode), lastEventHash: pass.lastHash.map(Hex.encode),
                blobCount: Int64(present.count), blobBytes: present.reduce(0) { $0 + $1.1 },
                creator: "editlog \(EditLogVersion.current)" + (options.user.map { " (user \($0))" } ?? ""),
                createdAt: Timestamp.format(milliseconds: now), since: options.since.description, layers: options.layers?.names)
            found = (manifest, pass.count, present, missing)
            return (manifest.json.serializedBytes() + [0x0A], schemaEvent.canonicalPayload)
        }

        // Pass 2: the bundle.
        let writer = try BundleWriter(path: path, mtime: now / 1000, blockSize: options.blockSize, engine: engine, head: makeHead)
        let range = "FROM events WHERE position > ? AND position <= ?"
        var done: Int64 = 0
        var lines: Int64 = 0
        let total = until - from
        // Each line is written from the stored columns (`BundleEventLine`), after the event's chain hash is checked
        // against them: a bundle never carries an event the log's chain does not vouch for.
        var line: [UInt8] = []
        line.reserveCapacity(4_096)
        var encoder = EventHash.Encoder()
        let loader = EventColumnLoader()
        try EventReading.step(db, sql: "SELECT \(EventReading.columns) \(range) ORDER BY position", arguments: [from, until]) { statementRow in
            try loader.withColumns(of: statementRow) { row in
                let position = row.integer(.position)
                guard let hash = row.bytes(.hash) else { throw EditLogError(.corrupt, "hash is NULL", at: "position \(position)") }
                do { try previous.withUnsafeBytes { p in try EventHash.encode(row, previous: p, into: &encoder) } } catch let missing as EventHash.MissingColumn {
                    throw EditLogError(.corrupt, "\(missing.column.name) is NULL", at: "position \(position)")
                }
                guard encoder.digestEquals(hash) else {
                    throw EditLogError(.corrupt, "the event's hash does not match its columns: the log was altered (run editlog verify)", at: "position \(position)")
                }
                done += 1
                if done % 1024 == 0 { progress?(done, total) }
                if layers == nil || keeps(stream: row.bytes(.stream).map { String(decoding: $0, as: UTF8.self) } ?? "", layers: layers) {
                    line.removeAll(keepingCapacity: true)
                    try previous.withUnsafeBytes { p in try BundleEventLine.write(row, previous: p, to: &line) }
                    try writer.addEventLine(line)
                    lines += 1
                }
                previous.removeAll(keepingCapacity: true)
                previous.append(contentsOf: hash)
                return true
            }
        }
        try writer.fillHead()
        guard let found else { preconditionFailure("the bundle's head is filled") }
        let (manifest, count, present, missing) = found
        guard lines == count else {
            throw EditLogError(.corrupt, "the manifest counted \(count) events from position \(from + 1) to \(until) but \(lines) were written: positions are missing (run editlog verify)",
                               at: store.path)
        }
        progress?(total, total)
        // Each blob is copied a piece at a time (`BlobStorage`) and hashed on the way: a bundle never carries bytes
        // whose SHA-256 is not their name.
        for (sha, size) in present {
            guard let key = Hex.decode(sha), key.count == 32 else { throw EditLogError(.corrupt, "blob \(sha) is not a SHA-256", at: store.path) }
            let digest = try writer.add(BundleLayout.blobsPrefix + sha, size: size) { write in
                var held: Int64 = 0
                let listed = try BlobReading.pieces(db, sha256: key) { piece in
                    held += Int64(piece.count)
                    guard held <= size else {
                        throw EditLogError(.corrupt, "the stored blob \(sha) holds more than the \(size) bytes the log lists (run editlog verify)", at: store.path)
                    }
                    try write(piece)
                }
                guard listed != nil else { throw EditLogError(.corrupt, "blob \(sha) vanished during the export", at: store.path) }
                guard held == size else {
                    throw EditLogError(.corrupt, "the stored blob \(sha) holds \(held) of the \(size) bytes the log lists (run editlog verify)", at: store.path)
                }
            }
            guard digest == key else {
                throw EditLogError(.corrupt, "the stored blob \(sha) does not have that SHA-256 (run editlog verify)", at: store.path)
            }
        }
        let sha = try writer.finish(signingKey: options.signingKey)
        return (manifest, Written(sha256: sha, bytes: writer.file.bytesWritten, uncompressed: writer.gzip.uncompressedBytes), missing)
    }
}
