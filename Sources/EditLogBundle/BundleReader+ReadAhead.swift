import EditLogCore
import Foundation

/// A bundle read on a thread of its own: decompressing it, checking its checksums, parsing its event lines and
/// checking their chain overlap with the import on the caller's thread. Items come over in order, in batches, at most a few
/// megabytes in flight, so memory stays flat.
public final class BundleReadAhead: @unchecked Sendable {
    public enum Item {
        /// A checked event, its payload's canonical bytes, and where it was in the bundle.
        case event(RecordedEvent, canonicalPayload: [UInt8], at: BundleLocation)
        /// A blob whose bytes match its SHA-256 (hex).
        case blob(sha256: String, bytes: [UInt8])
    }

    /// Every item, then the end, or the reader's error (`BundleReader.read` checks) once every item before it was taken.
    public let items = HandOff<Item>(batchSize: 128, batchWeight: 1 << 20, maxBatches: 2)
    private let reader: BundleReader
    private let trust: [[UInt8]]
    // Written by the reading thread before it closes `items`; read by the consumer after `items` ended.
    private var result: BundleContents?

    /// Starts reading `reader` (which must not have been read) on a new thread.
    public init(_ reader: BundleReader, trust: [[UInt8]]) {
        self.reader = reader
        self.trust = trust
        // The stack a main thread gets: the JSON of a line nests up to `JSONParser.maxDepth` deep.
        let thread = Thread { [self] in run() }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// What the bundle held: valid once `items.take()` returned nil.
    public var contents: BundleContents {
        guard let result else { preconditionFailure("BundleReadAhead.contents read before every item was taken") }
        return result
    }

    /// Stops the reading thread and waits for it (after the consumer failed).
    public func cancel() {
        items.cancel()
        items.waitClosed()
    }

    private func run() {
        let items = self.items
        do {
            result = try reader.read(trust: trust, checked: { e, payload, location in
                try items.put(.event(e, canonicalPayload: payload, at: location), weight: payload.count)
            }, blob: { sha, bytes in
                try items.put(.blob(sha256: sha, bytes: bytes), weight: bytes.count)
            })
            items.close()
        } catch {
            items.close(failure: error)
        }
    }
}
