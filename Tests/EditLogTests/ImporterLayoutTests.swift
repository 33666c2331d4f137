@testable import EditLogImport
import Testing

/// The import keeps one `Touched` per feature it meets for its whole run (about 100k for a million-event bundle),
/// within the 100 MB peak RSS goal: each is 32 bytes, and a field added to it must make room first.
@Suite struct ImporterLayoutTests {
    @Test func aTouchedFeatureIs32Bytes() {
        #expect(MemoryLayout<Importer.Touched>.stride == 32)
        #expect(MemoryLayout<Importer.WriterBound>.stride == 16)
    }
}
