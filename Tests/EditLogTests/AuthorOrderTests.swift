import EditLogCore
import EditLogMerge
import Foundation
import Testing

/// `Author.Order(e)` (what an import compares per event) follows the last-in-wins rule and `Author(e)` orders the
/// same; `StreamName.parseFeature` splits a stream at its first ":" byte (read through the UTF-8 view; found by
/// Character, a combining mark after the colon hid it).
@Suite struct AuthorOrderTests {
    @Test func anEventsOrderIsItsWritersOrder() {
        var rng = SplitMix64(seed: 3)
        let types: [EventType] = [.featureBaselined, .sessionCommitted, .featureDerived, .conflictResolved, .featureDeleted]
        let times: [String?] = [nil, "2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.5Z", "not a time", "2026-05-01T23:59:59.999+02:00"]
        for n in 0..<200 {
            let type = types.randomElement(using: &rng)!
            let client = times.randomElement(using: &rng)!
            let e = RecordedEvent(position: Int64(n + 1), id: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012x", n))!, stream: "0:{6C4B9A53-0C0E-4C4B-8E3B-0E4C5A1B2C3D}", streamVersion: 1,
                                  type: type.rawValue, payload: .object([:]), actor: "a", device: "d", session: nil, cause: "test",
                                  clientTime: client, recordedTime: "2026-05-01T09:00:00.000Z",
                                  origin: EventOrigin(logId: ["a", "b", "hub"].randomElement(using: &rng)!, position: Int64.random(in: 1...50, using: &rng),
                                                      hash: Array(repeating: 0, count: 32)),
                                  hash: Array(repeating: 0, count: 32))
            let o = Author.Order(e)
            // The rule itself: a baseline before every edit, else the client time (the recorded one without it;
            // 0 for a time that does not parse), then the origin log and position.
            let millis = type == .featureBaselined ? Int64.min : Timestamp.parse(client ?? "2026-05-01T09:00:00.000Z") ?? 0
            #expect(o == Author.Order(millis: millis, logId: e.origin.logId, position: e.origin.position), "\(type) at \(client ?? "no client time")")
            if type != .featureBaselined, client == "not a time" { #expect(o.millis == 0) }
            if type != .featureBaselined, client == nil { #expect(o.millis == Timestamp.parse("2026-05-01T09:00:00.000Z")!) }
            // And the writer the merge engine records orders the same.
            #expect(Author(e).order == o)
        }
    }

    @Test func featureStreamsSplitAtTheirFirstColon() {
        #expect(StreamName.parseFeature("0:{6C4B9A53-0C0E-4C4B-8E3B-0E4C5A1B2C3D}")! == (0, "{6C4B9A53-0C0E-4C4B-8E3B-0E4C5A1B2C3D}"))
        #expect(StreamName.parseFeature("12:é:x")! == (12, "é:x"))
        #expect(StreamName.parseFeature("-3:g")! == (-3, "g"))
        #expect(StreamName.parseFeature("7:")! == (7, ""))
        for bad in ["$schema", "", ":g", "x:g", "é:g", "1é:g", "12"] {
            #expect(StreamName.parseFeature(bad) == nil, "\(bad)")
        }
        // A combining mark after the colon: split on the byte, the rest kept whole.
        #expect(StreamName.parseFeature("5:\u{301}g")! == (5, "\u{301}g"))
    }
}
