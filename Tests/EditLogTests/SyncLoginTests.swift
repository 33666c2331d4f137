import EditLog
import EditLogServer
import EditLogSync
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// `sync --user`: a device logs in as the field apps do (rest/info's token service, a POST of the name and the
/// password), logs in again once when its token expires mid-sync, and never writes the password anywhere.
/// The hub is `serve --users` in process, on a clock the test moves past the token's lifetime.
@Suite(.serialized) struct SyncLoginTests {
    static let user = "alice_pdx"
    static let password = "alice-secret-1"

    /// A hub log served with a users file (alice_pdx, hashed with 1,000 rounds) and a clock the test moves;
    /// every request needs a token.
    final class LoginHub: @unchecked Sendable {
        let dir: String
        let now = Mutex<Date>(Date(timeIntervalSince1970: 1_790_000_000))

        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-sync-login-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var users = UsersFile()
            try users.set(SyncLoginTests.user, PasswordHash.make(password: SyncLoginTests.password, rounds: 1000))
            try users.write(to: dir + "/users")
        }

        deinit { try? FileManager.default.removeItem(atPath: dir) }

        func advance(minutes: Double) { now.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }

        /// `SyncRig.serve` with users who log in (no token file), on this hub's clock.
        func serve(_ hub: EditLog, _ body: @escaping @Sendable (String) async throws -> Void) async throws {
            try await SyncRig.serve(hub, configure: { options in
                options.tokens = [:]
                options.login = try Login(usersPath: dir + "/users", signer: TokenSigner(key: Array(repeating: 7, count: 32)), reloadInterval: 0)
                options.anonymousReads = false
                options.clock = { self.now.withLock { $0 } }
            }, body)
        }
    }

    /// Real HTTP to the hub that moves the hub's clock past the token's lifetime just before the first
    /// `applyEdits` (between the pull and the push), and records every request and each refused token.
    /// `status498`: a refused token is answered with HTTP 498 too, as some ArcGIS versions answer it.
    final class ExpiringTransport: ServiceTransport, @unchecked Sendable {
        let inner = HTTPTransport()
        let hub: LoginHub
        let status498: Bool
        let state = Mutex<(expired: Bool, refused: [String], sent: [(url: String, params: [(String, String)])])>((false, [], []))

        init(hub: LoginHub, status498: Bool) { self.hub = hub; self.status498 = status498 }

        var refused: [String] { state.withLock { $0.refused } }
        var sent: [(url: String, params: [(String, String)])] { state.withLock { $0.sent } }
        var tokenRequests: Int { sent.filter { $0.url.hasSuffix("/generateToken") }.count }

        func exchange(_ url: String, _ params: [(String, String)], _ send: () async throws -> TransportResponse) async throws -> TransportResponse {
            let expire = state.withLock { s in
                s.sent.append((url, params))
                guard url.hasSuffix("/applyEdits"), !s.expired else { return false }
                s.expired = true
                return true
            }
            if expire { hub.advance(minutes: 61) }
            var r = try await send()
            if (try? JSONParser.parse(r.body))?["error"]?["code"]?.intValue == 498 {
                state.withLock { $0.refused.append(url) }
                if status498 { r.status = 498 }
            }
            return r
        }

        func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse {
            try await exchange(url, query) { try await inner.get(url, query: query) }
        }

        func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse {
            try await exchange(url, form) { try await inner.postForm(url, form: form) }
        }
    }

    /// A device log in a directory of its own, whose every file the tests search for the password.
    static func device(in dir: String) throws -> EditLog {
        try Fixture.treesLog(at: dir + "/device.sqlite", seed: 22, logId: "log-device", clockStart: 1_780_000_500_000)
    }

    static func makeDir(_ name: String) throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// The files under `dir` whose bytes hold `password`.
    static func filesHolding(_ password: String, under dir: String) -> [String] {
        let needle = Data(password.utf8)
        let files = (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String]) ?? []
        return files.filter { FileManager.default.contents(atPath: dir + "/" + $0)?.range(of: needle) != nil }
    }

    /// The events of `log` that mention `password` anywhere.
    static func eventsHolding(_ password: String, in log: EditLog) throws -> [Int64] {
        try log.events().filter { e in
            [e.payload.serialized(), e.actor, e.device, e.cause, e.session ?? "", e.stream].contains { $0.contains(password) }
        }.map(\.position)
    }

    /// A hub that logs users in, its log, and a device log in a folder of its own (removed after `body`) with one
    /// local edit (tree1's SiteWidth).
    static func withLoginRig(_ body: (_ hubSide: LoginHub, _ hub: Unchecked<EditLog>, _ device: Unchecked<EditLog>, _ deviceDir: String) async throws -> Void) async throws {
        let hubSide = try LoginHub()
        let deviceDir = try makeDir("sync-login-device")
        defer { try? FileManager.default.removeItem(atPath: deviceDir) }
        let th = TempPath("hub")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try Self.device(in: deviceDir))
        defer { hub.value.close(); device.value.close(); _ = th }
        try SyncRig.set(device.value, SyncRig.tree1, [("SiteWidth", "10")], at: "2026-05-01T10:00:00Z", actor: "dana", session: "d-1")
        try await body(hubSide, hub, device, deviceDir)
    }

    @Test(arguments: [false, true])
    func aTokenThatExpiresMidSyncIsRenewedOnceAndTheSyncCompletes(status498: Bool) async throws {
        try await Self.withLoginRig { hubSide, hub, device, deviceDir in
            // Both sides changed: the pull brings the hub's tree, the push (after the token expired) sends the device's.
            let fromDevice = try SyncRig.addTree(device.value, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
            let fromHub = try SyncRig.addTree(hub.value, 200, actor: "hank", at: "2026-06-01T11:00:00Z")
            try await hubSide.serve(hub.value) { url in
                let transport = ExpiringTransport(hub: hubSide, status498: status498)
                let client = try FeatureServiceClient(url: url, user: Self.user, password: Self.password, transport: transport)
                let report = try await SyncEngine(log: device.value, client: client, options: SyncOptions(policy: .lastInWins, actor: "device_operator", device: "test")).run()
                #expect(report.pulled.contains { $0.globalId == fromHub.tree })
                #expect(report.pushed.contains { $0.globalId == fromDevice.tree })
                // The first applyEdits was refused (expired), nothing else; one login at the start and exactly one again.
                #expect(transport.refused.count == 1 && transport.refused.first?.hasSuffix("/applyEdits") == true, "\(transport.refused)")
                #expect(transport.tokenRequests == 2)
                #expect(await client.login?.logins == 2)
                let hubState = try SyncRig.userState(hub.value), deviceState = try SyncRig.userState(device.value)
                #expect(hubState == deviceState, "\(SyncRig.differences(hubState, deviceState).prefix(5))")
                // The device's edits are the logged-in user's sessions on the hub.
                #expect(try hub.value.sessions(actor: Self.user).count >= 1)
                // The password went to the token service only: in no other request.
                let leaks = transport.sent.filter { !$0.url.hasSuffix("/generateToken") && $0.params.contains { $0.1.contains(Self.password) } }
                #expect(leaks.isEmpty, "\(leaks.map(\.url))")
            }
            device.value.close()
            #expect(Self.filesHolding(Self.password, under: deviceDir).isEmpty)
            let reopened = try EditLog.open(at: deviceDir + "/device.sqlite")
            defer { reopened.close() }
            #expect(try Self.eventsHolding(Self.password, in: reopened).isEmpty)
        }
    }

    @Test func aWrongPasswordIsAClearErrorAndWritesNothing() async throws {
        try await Self.withLoginRig { hubSide, hub, device, deviceDir in
            let wrong = "not-her-password"
            try await hubSide.serve(hub.value) { url in
                let head = try device.value.lastPosition(), hubHead = try hub.value.lastPosition()
                for (name, password) in [(Self.user, wrong), ("mallory", Self.password)] {
                    let client = try FeatureServiceClient(url: url, user: name, password: password, transport: ExpiringTransport(hub: hubSide, status498: false))
                    do {
                        _ = try await SyncEngine(log: device.value, client: client, options: SyncOptions(policy: .lastInWins)).run()
                        Issue.record("a wrong password synced")
                    } catch let e as EditLogError {
                        #expect(e.kind == .invalidInput, "\(e)")
                        // Names the user and the service, says what the service said, never the password.
                        #expect(e.description.contains(name) && e.description.contains(url), "\(e)")
                        #expect(e.description.contains("Invalid username or password"), "\(e)")
                        #expect(!e.description.contains(password), "\(e)")
                    }
                }
                #expect(try device.value.lastPosition() == head)
                #expect(try hub.value.lastPosition() == hubHead)
            }
            device.value.close()
            #expect(Self.filesHolding(wrong, under: deviceDir).isEmpty)
        }
    }

    @Test func aServiceWithoutATokenServiceIsRefusedByName() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close(); _ = (th, td) }
        // SyncRig's hub has a token file and no users: rest/info names no token service.
        try await SyncRig.serve(hub.value) { url in
            let client = try FeatureServiceClient(url: url, user: Self.user, password: Self.password)
            do {
                _ = try await SyncEngine(log: device.value, client: client, options: SyncOptions(policy: .lastInWins)).run()
                Issue.record("logged in to a service without a token service")
            } catch let e as EditLogError {
                #expect(e.kind == .invalidInput && e.description.contains("tokenServicesUrl") && e.description.contains("--token"), "\(e)")
            }
        }
    }
}

extension SyncLoginTests {
    /// `editlog sync --user` itself: the password from stdin, the conflicting options refused, exit codes.
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func theCommandLogsInWithAPasswordFromStdinAndWritesItNowhere() async throws {
            let hubSide = try LoginHub()
            let deviceDir = try SyncLoginTests.makeDir("sync-login-cli")
            defer { try? FileManager.default.removeItem(atPath: deviceDir) }
            let th = TempPath("hub")
            let hub = Unchecked(try SyncRig.hub(th))
            defer { hub.value.close(); _ = th }
            let d = try SyncLoginTests.device(in: deviceDir)
            let fromDevice = try SyncRig.addTree(d, 100, actor: "dana", at: "2026-06-02T10:00:00Z")
            d.close()
            let path = deviceDir + "/device.sqlite"
            try await hubSide.serve(hub.value) { url in
                let head = try EditLog.open(at: path).lastPositionAndClose()
                // Both ways of giving a token beside --user: a usage error, before any password is read.
                for extra in [["--token", "t"], ["--token-file", deviceDir + "/none"]] {
                    let r = try await runCLI(["sync", path, "--service", url, "--user", SyncLoginTests.user] + extra, stdin: SyncLoginTests.password + "\n")
                    #expect(r.status == 64 && r.stderr.contains("--user"), "\(r.stderr)")
                }
                // A wrong password: 65, the user and the service named, nothing written.
                let bad = try await runCLI(["sync", path, "--service", url, "--user", SyncLoginTests.user], stdin: "not-her-password\n")
                #expect(bad.status == 65, "\(bad.stderr)")
                #expect(bad.stderr.contains(SyncLoginTests.user) && bad.stderr.contains(url) && !bad.stderr.contains("not-her-password"), "\(bad.stderr)")
                #expect(try EditLog.open(at: path).lastPositionAndClose() == head)
                // The right one, on stdin's first line: the sync runs as that user.
                let r = try await runCLI(["sync", path, "--service", url, "--user", SyncLoginTests.user, "--json"], stdin: SyncLoginTests.password + "\n")
                #expect(r.status == 0, "\(r.stderr)")
                #expect(!r.stdout.contains(SyncLoginTests.password) && !r.stderr.contains(SyncLoginTests.password))
                #expect((try JSONParser.parse(r.stdout))["pushed"]?.arrayValue?.contains { $0["globalId"]?.stringValue == fromDevice.tree } == true, "\(r.stdout)")
                #expect(try hub.value.sessions(actor: SyncLoginTests.user).count >= 1)
            }
            #expect(SyncLoginTests.filesHolding(SyncLoginTests.password, under: deviceDir).isEmpty)
            let log = try EditLog.open(at: path)
            defer { log.close() }
            #expect(try SyncLoginTests.eventsHolding(SyncLoginTests.password, in: log).isEmpty)
        }
    }
}

private extension EditLog {
    /// The last position, closing the log (the CLI opens it next).
    func lastPositionAndClose() throws -> Int64 {
        defer { close() }
        return try lastPosition()
    }
}
