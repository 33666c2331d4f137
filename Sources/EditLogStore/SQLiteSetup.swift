import CSQLiteConfig

/// SQLite's process-wide settings, made once before EditLog's first connection opens.
public enum SQLiteSetup {
    /// Whether SQLite keeps no memory statistics (`SQLITE_CONFIG_MEMSTATUS` off): by default every allocation and
    /// free inside SQLite takes a global mutex to count bytes, which nothing here reads (an import makes hundreds of
    /// thousands of them). Read by
    /// `EventStore.configuration` and the other openers before they open; false if SQLite was already initialized
    /// by code outside EditLog (then it stays as it was).
    public static let applied: Bool = csqlite_config_no_memstatus() == SQLITE_OK
}
