import EditLog
import Testing

@Suite struct ProcessMemoryTests {
    /// The executables' allocator setting (`editlog`, `editlog-bench`) is accepted by glibc's `mallopt`.
    @Test func theExecutablesAllocatorSettingTakesOnGlibc() {
        #if os(Linux)
        #expect(ProcessMemory.keepLargeAllocationsMapped())
        #endif
    }
}
