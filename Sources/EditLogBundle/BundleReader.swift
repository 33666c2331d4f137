import EditLogCore
import EditLogStore
import Foundation

/// What a bundle held, once read and checked whole.
public struct BundleContents: Sendable {
    public let manifest: BundleManifest
    public let schema: JSONValue
    /// The signer's raw Ed25519 public key, when the bundle is signed and the signature verified.
    public let signer: [UInt8]?
    public let eventCount: Int
    /// Every blob in the bundle, by its SHA-256 (32 bytes each, not a string: a bundle may hold tens of thousands).
    public let blobs: Set<BlobRef>
    /// Blobs the events reference that the bundle does not hold (the caller decides whether it has them).
    public let missingBlobs: Set<String>

    /// The SHA-256 (hex) of every blob in the bundle, made on each call (for a count, `blobs.count`).
    public var blobShas: Set<String> { Set(blobs.map(\.text)) }
}

/// Reads a bundle as a stream: `init` reads `manifest.json` and `schema.json` (the first two entries), `read`
/// the rest, checking everything as it goes and at the end (see `read`).
public final class BundleReader {
    public let path: String
    public let limits: BundleLimits
    public let manifest: BundleManifest
    public let schema: JSONValue
    private let tar: TarReader
    private var sums: [SumEntry] = []
    private var consumed = false

    static let maxManifestBytes: Int64 = 1 << 20
    static let maxSchemaBytes: Int64 = 256 << 20

    public init(path: String, limits: BundleLimits = .default) throws(EditLogError) {
        self.path = path
        self.limits = limits
        let tar = TarReader(source: try GzipInputStream(path: path, limits: limits))
        self.tar = tar
        var sums: [SumEntry] = []
        func first(_ name: String, max: Int64) throws(EditLogError) -> JSONValue {
            guard let e = try tar.next() else { throw EditLogError(.corrupt, "the archive is empty; \(name) must come first", at: path) }
            guard e.name == name else { throw EditLogError(.corrupt, "the entry \"\(e.name.prefix(100))\" is where \(name) must be", at: path) }
            guard e.size <= max else { throw EditLogError(.invalidInput, "refused: \(name) is \(e.size) bytes, more than the \(max) a bundle's \(name) may have", at: path) }
            let bytes = try tar.readAll()
            sums.append(.named(name, EventHash.sha256(bytes)))
            do { return try JSONParser.parse(bytes) } catch {
                throw EditLogError(.corrupt, "not valid JSON: \(error.description)", at: "\(path): \(name)")
            }
        }
        let manifestJSON = try first(BundleLayout.manifest, max: Self.maxManifestBytes)
        let manifest: BundleManifest
        do { manifest = try BundleManifest(json: manifestJSON) } catch {
            // A format this build does not know is judged on an intact first member only: read to its end (the schema,
            // then the next entry's header), so that damage (a CRC that does not match) is reported as damage, not as
            // a reason to upgrade.
            if error.kind == .unsupported {
                _ = try first(BundleLayout.schema, max: Self.maxSchemaBytes)
                _ = try tar.next()
            }
            throw error.at(path)
        }
        let schema = try first(BundleLayout.schema, max: Self.maxSchemaBytes)
        self.manifest = manifest
        self.schema = schema
        self.sums = sums
        guard schema.objectValue != nil else { throw EditLogError(.corrupt, "schema.json is not a JSON object (a SchemaDefined payload)", at: path) }
        if SchemaFingerprint.of(schemaPayload: schema) != manifest.schemaFingerprint {
            throw EditLogError(.corrupt, "schema.json does not match the manifest's schemaFingerprint", at: path)
        }
    }

    /// How much of an event chunk (or of SHA256SUMS) is read at a time: a sixteenth of a whole 4 MiB chunk, which
    /// the reading thread used to hold while it decoded the chunk's lines.
    static let pieceBytes = 256 << 10

    /// Streams the rest: each event (decoded, its chain hash re-computed from `previousHash` and checked; the
    /// manifest's count, first and last hash checked at the end), each blob in pieces (`BlobPiece`, in order; the last
    /// one handed over only once the bytes' SHA-256 matched the blob's name), then SHA256SUMS (every entry's hash and
    /// the entry list) and the signature (checked; with a non-empty `trust` the signer must be one of them and a
    /// signature is required). The callbacks run before the final checks: do the work in a transaction and roll it
    /// back on a throw. Can be called once.
    public func read(trust: [[UInt8]] = [], event: (RecordedEvent) throws -> Void,
                     blob: (BlobPiece) throws -> Void) throws(EditLogError) -> BundleContents {
        try read(trust: trust, checked: { e, _, _ in try event(e) }, blob: blob)
    }

    /// `read`, handing each event over with its payload's canonical bytes (serialized once to check its hash) and
    /// where it was in the bundle.
    public func read(trust: [[UInt8]] = [], checked event: (RecordedEvent, _ canonicalPayload: [UInt8], BundleLocation) throws -> Void,
                     blob: (BlobPiece) throws -> Void) throws(EditLogError) -> BundleContents {
        guard !consumed else { throw EditLogError(.io, "a bundle reader reads once; open the bundle again", at: path) }
        consumed = true
        var state = ReadState(manifest: manifest)
        // An event chunk's (or SHA256SUMS's) bytes read and not yet decoded (a partial line), and how many of them
        // were hashed and searched for a newline already. Empty between entries.
        var pending: [UInt8] = []
        pending.reserveCapacity(Self.pieceBytes + (64 << 10))
        var pendingChecked = 0
        var sumsChecked: SumsCheck?
        var signatureBytes: [UInt8]?
        func corrupt(_ m: String, _ entry: String? = nil) -> EditLogError {
            EditLogError(.corrupt, m, at: entry.map { "\(path): \($0)" } ?? path)
        }
        /// An entry larger than a reader takes (`schemas/bundle.md`, Limits): refused as input, before it is read.
        func tooLarge(_ what: String, _ size: Int64, max: Int64, _ entry: String) -> EditLogError {
            EditLogError(.invalidInput, "refused: \(what) is \(size) bytes, more than the \(max) a reader takes (a limit of the format)", at: "\(path): \(entry)")
        }
        func callback(_ body: () throws -> Void, _ entry: @autoclosure () -> String) throws(EditLogError) {
            do { try body() } catch let e as EditLogError { throw e } catch { throw EditLogError.wrapping(error, at: "\(path): \(entry())") }
        }
        while let entry = try tar.next() {
            let name = entry.name
            if signatureBytes != nil { throw corrupt("the entry \"\(name.prefix(100))\" follows SHA256SUMS.sig, which must be last") }
            if sumsChecked != nil && name != BundleLayout.signature {
                throw corrupt("the entry \"\(name.prefix(100))\" follows SHA256SUMS; only SHA256SUMS.sig may")
            }
            if name.hasPrefix(BundleLayout.eventsPrefix) {
                guard state.blobs.isEmpty else { throw corrupt("an event chunk after the blobs: events come first", name) }
                let expected = BundleLayout.chunkName(state.chunks + 1)
                guard name == expected else { throw corrupt("the event chunk \"\(name.prefix(100))\" is where \(expected) must be") }
                guard entry.size <= BundleLayout.maxChunkBytes else { throw tooLarge("an event chunk", entry.size, max: Int64(BundleLayout.maxChunkBytes), name) }
                state.chunks += 1
                guard entry.size > 0 else { throw corrupt("the chunk does not end with a newline", name) }
                // Read in pieces, each line decoded once it is whole: a chunk (up to 4 MiB) is never held at once.
                var digest = ContentDigest()
                var line = 0
                while try tar.appendData(to: &pending, max: Self.pieceBytes) {
                    pending.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[pendingChecked...])) }
                    var start = 0
                    for i in pendingChecked..<pending.count where pending[i] == 0x0A {
                        line += 1
                        var where_: String { "\(name): line \(line)" }  // only built when an error names it
                        let e: RecordedEvent
                        let payload: [UInt8]
                        do { (e, payload) = try state.event(pending[start..<i]) } catch { throw error.at("\(path): \(where_)") }
                        try callback({ try event(e, payload, BundleLocation(chunk: name, line: line)) }, where_)
                        start = i + 1
                    }
                    // The part of a line the next piece ends.
                    pending.removeSubrange(0..<start)
                    pendingChecked = pending.count
                }
                guard pending.isEmpty else { throw corrupt("the chunk does not end with a newline", name) }
                pendingChecked = 0
                sums.append(.named(name, digest.finalize()))
            } else if name.hasPrefix(BundleLayout.blobsPrefix) {
                let sha = String(name.dropFirst(BundleLayout.blobsPrefix.count))
                guard sha.utf8.count == 64, sha == sha.lowercased(), Hex.decode(sha) != nil else {
                    throw corrupt("a blob entry's name is not blobs/<64 lowercase hex digits>", name)
                }
                let ref = BlobRef(sha)
                guard !state.blobs.contains(ref) else { throw corrupt("the blob is in the bundle twice", name) }
                guard state.referenced.contains(ref) else { throw corrupt("no event of the bundle references this blob", name) }
                // Handed over in pieces (`BlobStorage.chunkBytes`), hashed as they come: the last piece only once the
                // whole blob's SHA-256 matched its name. An attachment of any size is never held whole.
                guard let key = ref.digestBytes else { throw corrupt("a blob entry's name is not a SHA-256", name) }
                var digest = ContentDigest()
                var offset: Int64 = 0
                repeat {
                    var bytes: [UInt8] = []
                    _ = try tar.appendData(to: &bytes, max: BlobStorage.chunkBytes)
                    digest.update(bytes)
                    let piece = BlobPiece(sha256: key, size: entry.size, offset: offset, bytes: bytes)
                    offset += Int64(bytes.count)
                    if piece.isLast {
                        let got = digest.finalize()
                        guard got == key else { throw corrupt("the blob's bytes have SHA-256 \(Hex.encode(got)), not its name", name) }
                    }
                    try callback({ try blob(piece) }, name)
                } while offset < entry.size
                // Its name is its SHA-256, which is its entry's: the list keeps the 32 bytes alone.
                sums.append(.blob(ref))
                state.blobs.insert(ref)
                state.blobBytes += entry.size
            } else if name == BundleLayout.sums {
                guard entry.size <= 64 << 20 else { throw tooLarge("SHA256SUMS", entry.size, max: 64 << 20, name) }
                // Checked line by line as it is read: the list is about 140 bytes per entry, megabytes for a bundle of
                // many attachments, and not held (`SumsCheck.bytes()` gives it back for a signature).
                var check = SumsCheck(entries: sums, path: path)
                while try tar.appendData(to: &pending, max: Self.pieceBytes) { try check.feed(&pending) }
                try check.finish(rest: pending, size: entry.size)
                sumsChecked = check
            } else if name == BundleLayout.signature {
                guard sumsChecked != nil else { throw corrupt("SHA256SUMS.sig comes before SHA256SUMS") }
                guard entry.size <= 1 << 16 else { throw tooLarge("SHA256SUMS.sig", entry.size, max: 1 << 16, name) }
                signatureBytes = try tar.readAll()
            } else {
                throw corrupt("unexpected entry \"\(name.prefix(100))\" (a bundle holds manifest.json, schema.json, events/, blobs/, SHA256SUMS and SHA256SUMS.sig)")
            }
        }
        guard let sumsChecked else { throw corrupt("the archive ends without SHA256SUMS (truncated)") }
        do { try state.finish() } catch { throw error.at(path) }
        var signer: [UInt8]?
        if let signatureBytes {
            do { signer = try BundleSignature.verify(signatureBytes, sums: sumsChecked.bytes()) } catch { throw error.at(path) }
        }
        if !trust.isEmpty {
            guard let signer else {
                throw EditLogError(.validation, "the bundle is not signed, and --trust requires a signature by one of \(trust.count) trusted key(s)", at: path)
            }
            guard trust.contains(signer) else {
                throw EditLogError(.validation, "the bundle is signed by \(Data(signer).base64EncodedString()), which is not a trusted key", at: path)
            }
        }
        return BundleContents(manifest: manifest, schema: schema, signer: signer, eventCount: Int(state.count), blobs: state.blobs,
                              missingBlobs: Set(state.referenced.subtracting(state.blobs).map(\.text)))
    }

}

/// An entry SHA256SUMS must list, in the order of the archive. A blob's name is `blobs/` and its SHA-256, which is
/// also its entry's: it is kept as those 32 bytes only (a bundle of tens of thousands of attachments held a name
/// string and a digest array for each).
enum SumEntry {
    case named(String, [UInt8])
    case blob(BlobRef)

    /// The entry's name and SHA-256, built when the list is checked.
    var entry: (name: String, sha256: [UInt8]) {
        switch self {
        case .named(let name, let sha): return (name, sha)
        case .blob(let ref): return (BundleLayout.blobsPrefix + ref.text, ref.digestBytes ?? [])
        }
    }
}

/// Where an event is in a bundle: its chunk's entry name and its line there (from 1).
public struct BundleLocation: Sendable, CustomStringConvertible {
    public let chunk: String
    public let line: Int
    public var description: String { "\(chunk): line \(line)" }
}

/// The running checks over a bundle's events.
struct ReadState {
    let manifest: BundleManifest
    var chunks = 0
    var count: Int64 = 0
    var first: [UInt8]?
    var last: RecordedEvent?
    var referenced = Set<BlobRef>()
    var blobs = Set<BlobRef>()
    var blobBytes: Int64 = 0
    var encoder = EventHash.Encoder()
    /// The exporting log's last schema event in the bundle: its position and payload's fingerprint.
    var lastOwnSchema: (position: Int64, fingerprint: String)?

    init(manifest: BundleManifest) { self.manifest = manifest }

    /// Decodes and checks one line: the event and its payload's canonical bytes.
    mutating func event(_ line: ArraySlice<UInt8>) throws(EditLogError) -> (RecordedEvent, [UInt8]) {
        let e: RecordedEvent, previous: [UInt8]
        /// The payload's bytes as the line has them, when it is in the exporter's layout.
        var lineBytes: [UInt8]?
        if let d = line.withUnsafeBufferPointer({ BundleEventLine.decode($0) }) {
            (e, previous) = (d.event, d.previous)
            lineBytes = Array(line[(line.startIndex + d.payload.lowerBound)..<(line.startIndex + d.payload.upperBound)])
        } else {
            let json: JSONValue
            do { json = try JSONParser.parse(line) } catch { throw EditLogError(.corrupt, "not valid JSON: \(error.description)") }
            guard case .object(var o) = json else { throw EditLogError(.corrupt, "an event line must be a JSON object") }
            guard let prevHex = o.removeValue(forKey: "previousHash")?.stringValue, prevHex.utf8.count == 64, let p = Hex.decode(prevHex) else {
                throw EditLogError(.corrupt, "\"previousHash\" is missing or not 64 hex digits")
            }
            previous = p
            do { e = try RecordedEvent(json: .object(o)) } catch { throw EditLogError(.corrupt, error.message) }
        }
        var at: String { "position \(e.position)" }  // only built when an error names it
        // The canonical payload: an exporting EditLog writes it as stored, and the chain hash covers those bytes, so
        // the line's own bytes are taken when the hash holds over them; otherwise (another layout, or bytes that are
        // not canonical) the payload serialized, over which the hash must hold.
        let canonical: [UInt8]
        if let lineBytes, e.chainHashMatches(previous: previous, payload: lineBytes, using: &encoder) {
            canonical = lineBytes
        } else {
            canonical = e.canonicalPayload
            guard e.chainHashMatches(previous: previous, payload: canonical, using: &encoder) else {
                throw EditLogError(.corrupt, "the event's hash does not match its contents and previousHash: the event was changed", at: at)
            }
        }
        guard e.position > manifest.fromPosition, e.position <= manifest.toPosition else {
            throw EditLogError(.corrupt, "the position is outside the manifest's range \(manifest.fromPosition)...\(manifest.toPosition)", at: at)
        }
        if let last {
            guard e.position > last.position else { throw EditLogError(.corrupt, "positions must increase (after \(last.position))", at: at) }
            if manifest.layers == nil {
                guard e.position == last.position + 1, previous == last.hash else {
                    throw EditLogError(.corrupt, "the chain breaks: the event does not follow position \(last.position) (\(Hex.encode(last.hash.prefix(8)))…)", at: at)
                }
            }
        } else if manifest.layers == nil, e.position != manifest.fromPosition + 1 {
            throw EditLogError(.corrupt, "the first event must be at position \(manifest.fromPosition + 1), after the manifest's fromPosition", at: at)
        }
        if e.position == 1 {
            guard previous == EventHash.genesis else { throw EditLogError(.corrupt, "the first event of a log follows the genesis hash (zeros)", at: at) }
            // A log's first event defines its schema.
            guard e.type == EventType.schemaDefined.rawValue, e.stream == StreamName.schema else {
                throw EditLogError(.corrupt, "the log's first event is not its SchemaDefined event", at: at)
            }
        }
        // schema.json is the schema in force at the bundle's end: the exporting log's last schema event, when the bundle
        // holds one (its own: another log's, imported with its events, is a record there).
        if e.stream == StreamName.schema, e.origin.logId == manifest.originLogId {
            lastOwnSchema = (e.position, SchemaFingerprint.of(canonicalPayload: canonical))
        }
        count += 1
        if first == nil { first = e.hash }
        last = e
        for sha in e.blobReferences { referenced.insert(BlobRef(sha)) }
        return (e, canonical)
    }

    func finish() throws(EditLogError) {
        func lie(_ m: String) -> EditLogError { EditLogError(.corrupt, "the manifest does not match the bundle: \(m)", at: "manifest.json") }
        guard count == manifest.eventCount else { throw lie("eventCount is \(manifest.eventCount), the bundle holds \(count) events") }
        guard first.map(Hex.encode) == manifest.firstEventHash else { throw lie("firstEventHash is not the first event's hash") }
        guard last.map({ Hex.encode($0.hash) }) == manifest.lastEventHash else { throw lie("lastEventHash is not the last event's hash") }
        if manifest.layers == nil, count != manifest.toPosition - manifest.fromPosition {
            throw lie("the range \(manifest.fromPosition)...\(manifest.toPosition) is \(manifest.toPosition - manifest.fromPosition) events without a layer filter, the bundle holds \(count)")
        }
        if manifest.layers == nil, let last, last.position != manifest.toPosition {
            throw lie("toPosition is \(manifest.toPosition), the last event is at position \(last.position)")
        }
        if let (position, fingerprint) = lastOwnSchema, fingerprint != manifest.schemaFingerprint {
            throw EditLogError(.corrupt, "schema.json is not the schema in force at the bundle's end: the exporting log's last schema event "
                               + "(position \(position)) does not match the manifest's schemaFingerprint")
        }
        guard Int64(blobs.count) == manifest.blobCount else { throw lie("blobCount is \(manifest.blobCount), the bundle holds \(blobs.count) blobs") }
        guard blobBytes == manifest.blobBytes else { throw lie("blobBytes is \(manifest.blobBytes), the blobs hold \(blobBytes) bytes") }
    }
}
