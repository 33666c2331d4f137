import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// Logging in as ArcGIS clients do: `generateToken` against a users file, tokens signed with a key file, bound
/// to an address or a referer, expiring on the injected clock, throttled after failed logins; a refusal never
/// says whether the user exists. The tests' users file hashes with 1,000 rounds (each line states its count).
@Suite("Feature service log in")
struct ServerLoginTests {
    static let base = ServedLog.base
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// A users file (alice_pdx, bob_pdx), a key file and the clock tests move.
    final class Setup: @unchecked Sendable {
        let dir: String
        let usersPath: String
        let keyPath: String
        let now = Mutex<Date>(ServerLoginTests.start)

        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-login-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            usersPath = dir + "/users"
            keyPath = dir + "/key"
            var users = UsersFile()
            try users.set("alice_pdx", PasswordHash.make(password: "alice-secret-1", rounds: 1000))
            try users.set("bob_pdx", PasswordHash.make(password: "bob-secret-22", rounds: 1000))
            try users.write(to: usersPath)
        }

        deinit { try? FileManager.default.removeItem(atPath: dir) }

        func login() throws -> Login {
            try Login(usersPath: usersPath, signer: try TokenSigner.loadOrCreate(at: keyPath), reloadInterval: 0)
        }

        func advance(seconds: Double) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }

        func run(_ body: @escaping @Sendable (any TestClientProtocol, Unchecked<EditLog>) async throws -> Void) async throws {
            let login = try login()
            try await ServedLog.run(configure: { o in
                o.login = login
                o.anonymousReads = false
                o.clock = { self.now.withLock { $0 } }
            }, body)
        }
    }

    static func generate(_ client: any TestClientProtocol, _ form: [(String, String)], path: String = "/arcgis/tokens/generateToken") async throws -> ServiceResponse {
        try await client.postForm(path, form + [("f", "json")])
    }

    static func edit(_ client: any TestClientProtocol, token: String, dbh: Int, headers: HTTPFields = [:]) async throws -> ServiceResponse {
        var h = headers
        h[.userAgent] = "LoginTest/1.0"
        return try await client.postForm(base + "/0/applyEdits", [("updates", #"[{"attributes":{"OBJECTID":1,"DBH":\#(dbh)}}]"#), ("f", "json"), ("token", token)], headers: h)
    }

    @Test func aLoginGivesATokenWhoseEditsAreTheUsersSessions() async throws {
        let setup = try Setup()
        try await setup.run { client, log in
            let r = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("client", "requestip")])
            let token = try #require(r.json["token"]?.stringValue, "\(r.text)")
            // ArcGIS's shape: expires in ms, 60 minutes from the injected clock by default; ssl false over http.
            #expect(r.json["expires"]?.intValue == Int64(Self.start.timeIntervalSince1970 * 1000) + 60 * 60_000)
            #expect(r.json["ssl"] == false)
            let e = try await Self.edit(client, token: token, dbh: 41)
            #expect(e.json["updateResults"]?.at(0)?["success"] == true, "\(e.text)")
            let sessions = try log.value.sessions(actor: "alice_pdx")
            #expect(sessions.count == 1)
            // Reads need a token here (no anonymous reads): the signed one is one.
            let q = try await client.getJSON(Self.base + "/0/query?where=OBJECTID%3D1&outFields=DBH&f=json&token=\(token)")
            #expect(q.json["features"]?.at(0)?["attributes"]?["DBH"]?.doubleValue == 41, "\(q.text)")
            // The portal path gives tokens too, and an asked-for lifetime is kept up to the maximum (1440 minutes).
            let p = try await Self.generate(client, [("username", "bob_pdx"), ("password", "bob-secret-22"), ("expiration", "5")], path: "/arcgis/sharing/rest/generateToken")
            #expect(p.json["expires"]?.intValue == Int64(Self.start.timeIntervalSince1970 * 1000) + 5 * 60_000, "\(p.text)")
            let long = try await Self.generate(client, [("username", "bob_pdx"), ("password", "bob-secret-22"), ("expiration", "100000")])
            #expect(long.json["expires"]?.intValue == Int64(Self.start.timeIntervalSince1970 * 1000) + 1440 * 60_000, "\(long.text)")
        }
    }

    @Test func restInfoNamesTheTokenService() async throws {
        let setup = try Setup()
        try await setup.run { client, _ in
            for (path, service) in [("/arcgis/rest/info?f=json", "/arcgis/tokens/generateToken"), ("/arcgis/sharing/rest/info?f=json", "/arcgis/sharing/rest/generateToken")] {
                let info = try await client.getJSON(path)
                #expect(info.json["authInfo"]?["isTokenBasedSecurity"] == true, "\(info.text)")
                #expect(info.json["authInfo"]?["tokenServicesUrl"]?.stringValue?.hasSuffix(service) == true, "\(info.text)")
                #expect(info.json["authInfo"]?["shortLivedTokenValidity"] == 60)
            }
        }
    }

    @Test func anUnknownUserAndAWrongPasswordGetTheSameAnswerAndWriteNothing() async throws {
        let setup = try Setup()
        try await setup.run { client, log in
            let head = try log.value.head()
            let wrong = try await Self.generate(client, [("username", "alice_pdx"), ("password", "not-her-password")])
            let unknown = try await Self.generate(client, [("username", "mallory"), ("password", "not-her-password")])
            #expect(wrong.json["error"]?["code"] == 400)
            #expect(wrong.json["error"]?["details"]?.at(0) == "Invalid username or password.")
            #expect(wrong.status == unknown.status && wrong.text == unknown.text)
            // Bad requests: each a clear ArcGIS error.
            let get = try await client.getJSON("/arcgis/tokens/generateToken?username=alice_pdx&password=alice-secret-1&f=json")
            #expect(get.json["error"]?["code"] == 405, "\(get.text)")
            #expect(get.json["token"] == nil)
            let missing = try await Self.generate(client, [("username", "alice_pdx")])
            #expect(missing.json["error"]?["details"]?.at(0) == "username and password are required")
            let client1 = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("client", "cookie")])
            #expect(client1.json["error"]?["details"]?.at(0)?.stringValue?.contains("requestip, ip or referer") == true, "\(client1.text)")
            let expiration = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("expiration", "-3")])
            #expect(expiration.json["error"]?["details"]?.at(0) == "expiration must be a positive number of minutes")
            #expect(try log.value.head() == head)
        }
    }

    @Test func tokensExpireAndOnlyThisKeysUnalteredTokensCount() async throws {
        let setup = try Setup()
        try await setup.run { client, log in
            let r = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("expiration", "10")])
            let token = try #require(r.json["token"]?.stringValue)
            #expect(try await Self.edit(client, token: token, dbh: 50).json["updateResults"]?.at(0)?["success"] == true)

            // Altered: one character of the payload changed (another user's name would be signed differently).
            var altered = Array(token)
            let i = altered.index(altered.startIndex, offsetBy: 6)
            altered[i] = altered[i] == "A" ? "B" : "A"
            // Signed by another key (another server's), for the same user and lifetime.
            let foreign = TokenSigner(key: Array(repeating: 7, count: 32)).sign(IssuedToken(user: "alice_pdx", expires: Int64.max, binding: .ip("unknown")))
            for bad in [String(altered), foreign, token + "x"] {
                let e = try await Self.edit(client, token: bad, dbh: 51)
                #expect(e.json["error"]?["code"] == 498, "\(e.text)")
            }
            // The token file's tokens keep working beside signed ones.
            #expect(try await Self.edit(client, token: ServedLog.editorToken, dbh: 52).json["updateResults"]?.at(0)?["success"] == true)

            setup.advance(seconds: 10 * 60 + 1)
            let late = try await Self.edit(client, token: token, dbh: 53)
            #expect(late.json["error"]?["code"] == 498, "\(late.text)")
            #expect(try log.value.sessions(actor: "alice_pdx").count == 2)
        }
    }

    @Test func aTokenIsGoodOnlyWhereItWasBound() async throws {
        let setup = try Setup()
        try await setup.run { client, _ in
            // client=ip for another address than this client's.
            let ip = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("client", "ip"), ("ip", "10.9.8.7")])
            let ipToken = try #require(ip.json["token"]?.stringValue)
            #expect(try await Self.edit(client, token: ipToken, dbh: 60).json["error"]?["code"] == 498)
            // client=referer: good with that Referer only (as arcgis sends it on every request).
            let ref = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1"), ("client", "referer"), ("referer", "https://maps.example")])
            let refToken = try #require(ref.json["token"]?.stringValue)
            #expect(try await Self.edit(client, token: refToken, dbh: 61).json["error"]?["code"] == 498)
            #expect(try await Self.edit(client, token: refToken, dbh: 62, headers: [.referer: "https://other.example"]).json["error"]?["code"] == 498)
            let ok = try await Self.edit(client, token: refToken, dbh: 63, headers: [.referer: "https://maps.example"])
            #expect(ok.json["updateResults"]?.at(0)?["success"] == true, "\(ok.text)")
        }
    }

    @Test func failedLoginsAreThrottledPerNameWhetherOrNotItExistsAndPerAddress() async throws {
        let setup = try Setup()
        try await setup.run { client, _ in
            for name in ["alice_pdx", "nobody_here"] {
                for _ in 0..<5 {
                    let r = try await Self.generate(client, [("username", name), ("password", "guess-guess")])
                    #expect(r.json["error"]?["details"]?.at(0) == "Invalid username or password.")
                }
            }
            // Blocked for 30 s: the right password too, and a name that does not exist answers alike.
            let right = try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1")])
            let ghost = try await Self.generate(client, [("username", "nobody_here"), ("password", "alice-secret-1")])
            #expect(right.json["token"] == nil)
            #expect(right.json["error"]?["code"] == 429, "\(right.text)")
            #expect(right.text == ghost.text)
            // bob_pdx is not blocked (10 failures from this address, 20 allowed).
            #expect(try await Self.generate(client, [("username", "bob_pdx"), ("password", "bob-secret-22")]).json["token"] != nil)
            setup.advance(seconds: 31)
            #expect(try await Self.generate(client, [("username", "alice_pdx"), ("password", "alice-secret-1")]).json["token"] != nil)
            // 20 failures from one address, over many names, block the address for every name.
            for n in 0..<20 { _ = try await Self.generate(client, [("username", "user\(n)"), ("password", "guess-guess")]) }
            let blocked = try await Self.generate(client, [("username", "bob_pdx"), ("password", "bob-secret-22")])
            #expect(blocked.json["error"]?["code"] == 429, "\(blocked.text)")
        }
    }

    @Test func aTokenOutlivesARestartAndARemovedUsersTokensStop() async throws {
        let setup = try Setup()
        let token = Mutex<String?>(nil)
        try await setup.run { client, _ in
            let r = try await Self.generate(client, [("username", "bob_pdx"), ("password", "bob-secret-22")])
            token.withLock { $0 = r.json["token"]?.stringValue }
        }
        let t = try #require(token.withLock { $0 })
        // The key file is the owner's alone.
        let mode = try FileManager.default.attributesOfItem(atPath: setup.keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Another server (a restart) with the same key file takes the token.
        try await setup.run { client, _ in
            #expect(try await Self.edit(client, token: t, dbh: 70).json["updateResults"]?.at(0)?["success"] == true)
            var users = try UsersFile.load(setup.usersPath)
            let removed = users.remove("bob_pdx")
            #expect(removed)
            try users.write(to: setup.usersPath)
            #expect(try await Self.edit(client, token: t, dbh: 71).json["error"]?["code"] == 498)
        }
    }

    @Test func aKeyFileOthersCanReadIsRefused() throws {
        let setup = try Setup()
        _ = try TokenSigner.loadOrCreate(at: setup.keyPath)
        chmod(setup.keyPath, 0o644)
        #expect(throws: EditLogError.self) { try TokenSigner.loadOrCreate(at: setup.keyPath) }
        chmod(setup.keyPath, 0o600)
        try "not hex\n".write(toFile: setup.keyPath, atomically: false, encoding: .utf8)
        #expect(throws: EditLogError.self) { try TokenSigner.loadOrCreate(at: setup.keyPath) }
    }

    @Test func theUsersFileStatesItsHashAndNamesTheBadLine() throws {
        let h = PasswordHash.make(password: "correct horse", rounds: 1000, salt: Array(repeating: 1, count: 16))
        #expect(h.text.hasPrefix("pbkdf2-sha256$1000$AQEBAQEBAQEBAQEBAQEBAQ==$"))
        #expect(h.matches("correct horse"))
        #expect(!h.matches("correct horse "))
        #expect(PasswordHash.make(password: "x").rounds == 600_000)
        var file = UsersFile()
        try file.set("carol", h)
        #expect(try UsersFile.parse(file.text, path: "u") == file)
        for (text, line, what) in [("carol\n", 1, "expected \"NAME HASH\""), ("# c\ncarol md5$1$AA==$AA==\n", 2, "expected a password hash"),
                                   ("carol \(h.text)\ncarol \(h.text)\n", 2, "listed twice"), ("carol pbkdf2-sha256$0$\(Base64Probe.salt)$\(Base64Probe.key)\n", 1, "rounds")] {
            do {
                _ = try UsersFile.parse(text, path: "u")
                Issue.record("parsed: \(text)")
            } catch {
                #expect(error.description.contains("u line \(line)") && error.description.contains(what), "\(error.description)")
            }
        }
        #expect(throws: EditLogError.self) { try file.set("two words", h) }
    }

    enum Base64Probe {
        static let salt = Data(repeating: 1, count: 16).base64EncodedString()
        static let key = Data(repeating: 2, count: 32).base64EncodedString()
    }
}
