import EditLogCore
import EditLogStore
import Foundation

/// A bundle read on a thread of its own: decompressing it, checking its checksums, parsing its event lines and
/// checking their chain overlap with the import on the caller's thread. Items come over in order, in batches, at most a few
/// megabytes in flight, so memory stays flat.
public final class BundleReadAhead: @unchecked Sendable {
    public enum Item {
        /// A checked event, its payload's canonical bytes, where it was in the bundle, and its hash in the importing log
        /// computed ahead (`ChainGuess`), when the read-ahead guesses.
        case event(RecordedEvent, canonicalPayload: [UInt8], at: BundleLocation, guess: ChainGuess?)
        /// A piece of a blob, in order (the last one only once the blob's bytes matched its SHA-256).
        case blob(BlobPiece)
    }

    /// Every item, then the end, or the reader's error (`BundleReader.read` checks) once every item before it was taken.
    /// Up to 8 batches (1,024 events) in flight: the importing thread works in bursts (the projector writes its
    /// pending rows 2,048 at a time) and the reading thread must not stop while one lasts (with 2, each thread often
    /// waited for the other). Not 16: the import's page cache (`Importer.pageCacheKiB`) took the memory the reading
    /// thread's arena held for the other 8, at no measurable cost in time.
    public let items = HandOff<Item>(batchSize: 128, batchWeight: 1 << 20, maxBatches: 8)
    private let reader: BundleReader
    private let trust: [[UInt8]]
    // Written by the reading thread before it closes `items`; read by the consumer after `items` ended.
    private var result: BundleContents?
    /// Where the importing log's chain ends as the import begins, for the guesses.
    private let guesser: ChainGuesser?
    private let guessing = NSLock()
    // Guarded by `guessing`.
    private var guessesWanted = true

    /// Starts reading `reader` (which must not have been read) on a new thread. With `guesser`, each event comes with
    /// its hash in the importing log computed on the guess that every event of the bundle is appended in turn
    /// (`ChainGuesser`), until `stopGuessing()`.
    public init(_ reader: BundleReader, trust: [[UInt8]], guesser: ChainGuesser? = nil) {
        self.reader = reader
        self.trust = trust
        self.guesser = guesser
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

    /// Stops the guesses (one did not hold: the import appended something else, or skipped an event).
    public func stopGuessing() {
        guessing.withLock { guessesWanted = false }
    }

    private func run() {
        let items = self.items
        var guesser = self.guesser
        do {
            result = try reader.read(trust: trust, checked: { e, payload, location in
                var guess: ChainGuess?
                if guesser != nil {
                    if guessing.withLock({ guessesWanted }) { guess = guesser!.next(e, canonicalPayload: payload) } else { guesser = nil }
                }
                try items.put(.event(e, canonicalPayload: payload, at: location, guess: guess), weight: payload.count)
            }, blob: { piece in
                try items.put(.blob(piece), weight: piece.bytes.count)
            })
            items.close()
        } catch {
            items.close(failure: error)
        }
    }
}
