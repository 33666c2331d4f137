import EditLog
import Foundation
import Synchronization

/// Logging in to the service: the users file, the token signer and the failed-login throttle. The users file is
/// read again when it changes (checked at most every `reloadInterval` seconds, 1 by default), so `editlog users add|remove` takes effect on a
/// running server, and a removed user's tokens stop working.
public final class Login: Sendable {
    public let usersPath: String
    public let signer: TokenSigner
    /// The longest lifetime a token can be asked for, in minutes (ArcGIS's `maxTokenExpiration`).
    public let maxMinutes: Int
    /// The lifetime when none is asked for, in minutes (ArcGIS's `shortLivedTokenValidity`).
    public static let defaultMinutes = 60
    let throttle: LoginThrottle
    let reloadInterval: Double
    private let cache: Mutex<(users: UsersFile, stamp: String, checked: Double)>
    /// The hash an unknown name's password is checked against, so that a refusal takes as long as for a known one.
    private let decoy: PasswordHash

    public init(usersPath: String, signer: TokenSigner, maxMinutes: Int = 1440, perUser: Int = 5, perAddress: Int = 20,
                reloadInterval: Double = 1) throws(EditLogError) {
        self.usersPath = usersPath
        self.signer = signer
        self.maxMinutes = maxMinutes
        self.reloadInterval = reloadInterval
        throttle = LoginThrottle(perUser: perUser, perAddress: perAddress)
        let users = try UsersFile.load(usersPath)
        cache = Mutex((users, Self.stamp(usersPath), ProcessInfo.processInfo.systemUptime))
        decoy = PasswordHash.make(password: UUID().uuidString, rounds: users.users.first?.hash.rounds ?? PasswordHash.defaultRounds)
    }

    static func stamp(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return "" }
        return "\(st.st_size):\(st.st_mtim.tv_sec):\(st.st_mtim.tv_nsec):\(st.st_ino)"
    }

    /// The users, read again where the file changed. A file that no longer parses keeps the last good one.
    var users: UsersFile {
        let now = ProcessInfo.processInfo.systemUptime
        return cache.withLock { c in
            guard now - c.checked >= reloadInterval else { return c.users }
            c.checked = now
            let stamp = Self.stamp(usersPath)
            if stamp != c.stamp, let fresh = try? UsersFile.load(usersPath) {
                c.users = fresh
                c.stamp = stamp
            }
            return c.users
        }
    }

    /// The user a signed token names, where it is unexpired, used as it was bound and its user still exists.
    public func user(forToken text: String, address: String, referer: String?, now: Date) -> String? {
        guard let t = signer.verify(text), t.expires > Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) else { return nil }
        switch t.binding {
        case .ip(let ip): guard ip == address else { return nil }
        case .referer(let r): guard referer == r else { return nil }
        }
        return users.hash(of: t.user) == nil ? nil : t.user
    }

    public enum Refusal: Error, Equatable {
        /// Unknown user or wrong password: the same answer for both.
        case invalidCredentials
        case throttled(seconds: Int)
    }

    /// Checks `name`'s `password` (throttled per name and address) and issues a token with `binding` for
    /// `minutes` (clamped to 1…maxMinutes).
    public func issue(name: String, password: String, binding: IssuedToken.Binding, minutes: Int, address: String, now: Date) -> Result<IssuedToken, Refusal> {
        let t = now.timeIntervalSince1970
        if let wait = throttle.wait(name: name, address: address, now: t) { return .failure(.throttled(seconds: Int(wait.rounded(.up)))) }
        let hash = users.hash(of: name)
        let ok = (hash ?? decoy).matches(password) && hash != nil
        guard ok else {
            throttle.failed(name: name, address: address, now: t)
            return .failure(.invalidCredentials)
        }
        throttle.succeeded(name: name, address: address)
        let ms = Int64((t * 1000).rounded(.down)) + Int64(min(max(minutes, 1), maxMinutes)) * 60_000
        return .success(IssuedToken(user: name, expires: ms, binding: binding))
    }
}
