import EditLogCore
import Testing

/// `EventType(rawValue:)` is written out (compared in order of frequency): every type's name gives it back, and
/// nothing else gives a type.
@Suite struct EventTypeTests {
    @Test func everyTypeIsFoundByItsNameAndOnlyByIt() {
        for t in EventType.allCases {
            #expect(EventType(rawValue: t.rawValue) == t, "\(t.rawValue)")
            // The name built at run time (not the literal's own storage) is found too.
            #expect(EventType(rawValue: String(t.rawValue.reversed().reversed())) == t)
            #expect(EventType(rawValue: t.rawValue.lowercased()) == nil)
            #expect(EventType(rawValue: t.rawValue + " ") == nil)
            #expect(EventType(rawValue: String(t.rawValue.dropLast())) == nil)
        }
        for other in ["", "Attribute", "attributeStaged", "AttributeStaged\u{0}", "SessionCommitted2", "ÄttributeStaged"] {
            #expect(EventType(rawValue: other) == nil, "\(other)")
        }
    }
}
