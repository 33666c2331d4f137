import Foundation
import Synchronization

/// The PostgreSQL server the hub's tests create their databases on: `EDITLOG_TEST_POSTGRES` when it is set (`.ci/run`
/// starts a server and sets it); else, where PostgreSQL is installed (`/usr/lib/postgresql/<version>/bin`, Debian's
/// layout), a throwaway cluster this test process starts once, in a temporary directory on a free loopback port, and
/// stops at exit; else none, and `skipReason` says why.
enum TestPostgres {
    static let server: (url: String?, skipReason: String) = start()

    private static let pgDirectory = Mutex<(bin: String, data: String, dir: String)?>(nil)

    private static func start() -> (url: String?, skipReason: String) {
        if let url = ProcessInfo.processInfo.environment["EDITLOG_TEST_POSTGRES"], !url.isEmpty { return (url, "") }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted()
        guard let version = versions.last(where: { FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/initdb") }) else {
            return (nil, "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb) and EDITLOG_TEST_POSTGRES is not set")
        }
        let bin = "/usr/lib/postgresql/\(version)/bin"
        let dir = NSTemporaryDirectory() + "editlog-test-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        let data = dir + "/data"
        // initdb refuses to run as root: then the cluster is the postgres user's.
        let asRoot = getuid() == 0
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            if asRoot { _ = try run("/usr/bin/chown", ["postgres", dir]) }
            let port = try freePort()
            func pg(_ name: String, _ args: [String]) throws -> (Int32, String) { try TestPostgres.tool(bin, name, args) }
            let (initStatus, initOutput) = try pg("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"])
            guard initStatus == 0 else { return (nil, "initdb failed: \(initOutput.suffix(300))") }
            let (startStatus, startOutput) = try pg("pg_ctl", ["-D", data, "-o", "-p \(port) -k \(dir) -c listen_addresses=127.0.0.1 -c fsync=off",
                                                                "-l", dir + "/server.log", "-w", "start"])
            guard startStatus == 0 else { return (nil, "PostgreSQL did not start: \(startOutput.suffix(300))") }
            pgDirectory.withLock { $0 = (bin, data, dir) }
            atexit {
                guard let (bin, data, dir) = TestPostgres.pgDirectory.withLock({ $0 }) else { return }
                _ = try? TestPostgres.tool(bin, "pg_ctl", ["-D", data, "-m", "immediate", "stop"])
                try? FileManager.default.removeItem(atPath: dir)
            }
            return ("postgres://postgres@127.0.0.1:\(port)/postgres", "")
        } catch {
            return (nil, "could not start a throwaway PostgreSQL \(version) cluster: \(error)")
        }
    }

    /// Runs one of PostgreSQL's programs, as the postgres user when this process is root (initdb refuses root).
    static func tool(_ bin: String, _ name: String, _ args: [String]) throws -> (Int32, String) {
        getuid() == 0 ? try run("/usr/sbin/runuser", ["-u", "postgres", "--", bin + "/" + name] + args) : try run(bin + "/" + name, args)
    }

    /// Runs a program and waits: its status and its output (stdout and stderr). The output goes to a file, not a
    /// pipe: the server pg_ctl starts inherits it and would hold a pipe open for ever. posix_spawn and waitpid,
    /// not Foundation's Process: this runs inside a static initializer, where Process never saw its child exit.
    static func run(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
        let outPath = NSTemporaryDirectory() + "editlog-test-pg-out-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD) }
        }
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self))
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
