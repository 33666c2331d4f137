// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "EditLog",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "EditLog", targets: ["EditLog"]),
        .executable(name: "editlog", targets: ["editlog"]),
        .executable(name: "editlog-bench", targets: ["editlog-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The pure core: JSON and its canonical bytes, ArcGIS schema decoding, values and their validation, geometry,
        // events and their hash, edit scripts, rules, the edit-session state machine. No I/O and no threads of its own:
        // time and ids come in through `LogClock` and `IDGenerator`.
        .target(name: "EditLogCore", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // The append-only event store on SQLite (GRDB, WAL): gap-free positions, stream versions, each event appended with
        // its chain hash, content-addressed blobs, reading events back, migrations.
        .target(name: "EditLogStore", dependencies: ["EditLogCore", "CSQLiteConfig", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        // The projection tables (features per layer, sessions, attachments, scripts) folded from events, at commit or by a
        // rebuild, with this log's merge decisions applied; the state edits are decided against, its digest, and a feature
        // query's SQL; and the one write unit of work every write goes through (`WriteUnit`: append, project, derive,
        // release). A replay (rebuild, replay as of a moment) writes its rows on a thread of its own (`SerialWorker`).
        .target(name: "EditLogProjections", dependencies: ["EditLogCore", "EditLogStore", "EditLogMerge", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        // Reading the log back: `log` filters on one clock, history, blame, diff, sessions, the report (its figures and its
        // HTML page), verify.
        .target(name: "EditLogAudit", dependencies: ["EditLogCore", "EditLogStore", "EditLogProjections", "EditLogMerge", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        // Replay as of a position or time (with checkpoints) and exports: SQLite, GeoPackage, GeoJSON, CSV.
        .target(name: "EditLogExport", dependencies: ["EditLogCore", "EditLogStore", "EditLogProjections", .product(name: "GRDB", package: "GRDB.swift")]),
        // The one merge engine: three-way, field-level decisions for imported events (bundles and sync), and the one fold of
        // an event's effect on its feature with this log's decisions applied (`FeatureEffect`), which every reader uses. Pure.
        .target(name: "EditLogMerge", dependencies: ["EditLogCore"]),
        // Importing another log's events (bundles and sync pulls): events already here skipped, merge decisions and conflicts
        // recorded as events, no orphan left, rules derived again; a bundle's import (read ahead as it merges); a script's
        // step (`WriteUnit.execute`: decide, emit, derive, release).
        .target(name: "EditLogImport", dependencies: ["EditLogCore", "EditLogStore", "EditLogProjections", "EditLogMerge", "EditLogBundle", .product(name: "GRDB", package: "GRDB.swift")]),
        // The system SQLite's process-wide threading mode (sqlite3_config is variadic: a C wrapper).
        .systemLibrary(name: "CSQLiteConfig", path: "Sources/CSQLiteConfig", providers: [.apt(["libsqlite3-dev"])]),
        // The system zlib (gzip members for change bundles).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // Change bundles: a ustar stream in independent gzip members (the system libdeflate where present, else zlib): export,
        // the streaming reader and its checks (read ahead on a thread of its own, `HandOff`), inspect, Ed25519 signatures.
        .target(name: "EditLogBundle", dependencies: ["EditLogCore", "EditLogStore", "CZlib", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift")]),
        // The facade apps and the CLI use: create or open a log, record sessions and scripts, read, query features, replay and
        // export, bundles, imports and conflicts.
        .target(name: "EditLog", dependencies: ["EditLogCore", "EditLogStore", "EditLogProjections", "EditLogAudit", "EditLogExport", "EditLogMerge", "EditLogImport", "EditLogBundle", .product(name: "GRDB", package: "GRDB.swift")]),
        // An audited ArcGIS FeatureServer over a log (editlog serve): reads from the projection, edits as sessions; log in
        // (generateToken) against a users file of PBKDF2 hashes, with tokens the server signs (HMAC-SHA256); replicas
        // (createReplica, synchronizeReplica, unRegisterReplica) as events, a replica's overwrites as conflicts.
        .target(name: "EditLogServer", dependencies: ["EditLog", "EditLogMerge", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                                                      .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")]),
        // editlog sync: a log against a FeatureServer (pull extractChanges, else a replica, else query; merge; push
        // applyEdits), state as events.
        .target(name: "EditLogSync", dependencies: ["EditLog", "EditLogMerge", .product(name: "AsyncHTTPClient", package: "async-http-client")]),
        // The hub's event store on PostgreSQL (postgres-nio): the store contract (`EventStoreEngine`) kept by a second engine,
        // with positions made gap-free by a locked one-row head, append-only triggers and role, the same chain; its URL and
        // credentials (URL, PGPASSWORD, pgpass).
        .target(name: "EditLogHub", dependencies: ["EditLog", "EditLogCore", "EditLogStore", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")]),
        // The `editlog` command line: one file per subcommand.
        .executableTarget(name: "editlog", dependencies: ["EditLog", "EditLogServer", "EditLogSync", "EditLogHub", .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Hummingbird", package: "hummingbird")]),
        // The benchmark: the EditLog facade's public API, raw SQLite (GRDBSQLite) for floors and reads, the feature service under wrk.
        .executableTarget(name: "editlog-bench", dependencies: ["EditLog", "EditLogServer", "EditLogSync", .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .testTarget(name: "EditLogTests", dependencies: ["EditLog", "EditLogStore", "EditLogHub", "EditLogProjections", "EditLogExport", "EditLogMerge", "EditLogImport", "EditLogBundle", "EditLogServer", "EditLogSync", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "HummingbirdTesting", package: "hummingbird")]),
    ],
    swiftLanguageModes: [.v6]
)
