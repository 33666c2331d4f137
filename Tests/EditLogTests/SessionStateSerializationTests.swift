import EditLog
import Foundation
import Testing

/// The projector writes a session's state with `serializedState()`; it must equal the canonical JSON of
/// `json` byte for byte (so rebuilds and older logs agree), for any state.
@Suite struct SessionStateSerializationTests {
    @Test(arguments: 0..<200)
    func theDirectWriterEqualsTheCanonicalJSON(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) &* 7919 &+ 1)
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        let texts = ["", "a", "Dead", "é\"\\\n\u{1}", "{00000000-0000-4000-8000-000000000001}", "10", "2", "zz", "photo.jpg"]
        let values: [JSONValue] = [.null, .bool(true), .int(-3), .double(12.5), .double(1e300), .string("x\"y"), ["a": 1, "b": [1, 2]], .array([])]
        var s = SessionState(id: pick(texts), layerId: Int(rng.next() % 20), globalId: pick(texts), kind: pick([.create, .edit]),
                             actor: pick(texts), device: pick(texts))
        s.status = pick([.open, .committed, .canceled, .abandoned])
        if rng.next() % 2 == 0 { s.geometry = ["x": .double(-122.6), "y": 45.5, "spatialReference": ["wkid": 4326]] }
        if rng.next() % 3 == 0 { s.parent = .init(relationship: pick(texts), globalId: pick(texts)) }
        for _ in 0..<Int(rng.next() % 6) { s.staged.append((pick(texts), pick(values))) }
        for _ in 0..<Int(rng.next() % 4) { s.relations[Int(rng.next() % 15)] = pick(texts) }
        for _ in 0..<Int(rng.next() % 3) {
            s.attachmentsAdded.append(.init(attachmentId: pick(texts), name: pick(texts), contentType: "image/jpeg", size: Int64(rng.next() % 9999),
                                            sha256: pick(texts), preferredSize: pick(["actual", "small"])))
        }
        for _ in 0..<Int(rng.next() % 3) { s.renames[pick(texts)] = pick(texts) }
        for _ in 0..<Int(rng.next() % 3) { s.detaches.append(pick(texts)) }
        #expect(s.serializedState() == s.json.serialized())
    }
}
