import Foundation
import Synchronization

/// Failed logins, counted per user name and per client address. After `perUser` failures in a row for a name
/// (whether or not such a user exists, so a refusal says nothing about it), or `perAddress` from an address,
/// logins for it are refused for 30 s, doubling with each further failure up to 15 minutes. A success clears
/// the name's and the address's count. Refused attempts are not counted and check no password.
final class LoginThrottle: Sendable {
    struct Entry { var failures = 0; var blockedUntil: Double = 0; var last: Double = 0 }

    let perUser: Int
    let perAddress: Int
    static let firstBlock = 30.0, longestBlock = 900.0
    private let entries = Mutex<[String: Entry]>([:])

    init(perUser: Int = 5, perAddress: Int = 20) {
        self.perUser = perUser
        self.perAddress = perAddress
    }

    static func userKey(_ name: String) -> String { "user:" + name.lowercased() }
    static func addressKey(_ address: String) -> String { "ip:" + address }

    /// Seconds until `name` from `address` may try again; nil when it may now.
    func wait(name: String, address: String, now: Double) -> Double? {
        entries.withLock { e in
            let until = max(e[Self.userKey(name)]?.blockedUntil ?? 0, e[Self.addressKey(address)]?.blockedUntil ?? 0)
            return until > now ? until - now : nil
        }
    }

    func failed(name: String, address: String, now: Double) {
        entries.withLock { e in
            for (key, limit) in [(Self.userKey(name), perUser), (Self.addressKey(address), perAddress)] {
                var entry = e[key] ?? Entry()
                entry.failures += 1
                entry.last = now
                if entry.failures >= limit {
                    let doublings = Double(min(entry.failures - limit, 10))
                    entry.blockedUntil = now + min(Self.firstBlock * pow(2, doublings), Self.longestBlock)
                }
                e[key] = entry
            }
            // Forget what has been quiet for an hour, so a flood of names cannot grow this without bound.
            if e.count > 10_000 { e = e.filter { now - $0.value.last < 3600 } }
        }
    }

    func succeeded(name: String, address: String) {
        entries.withLock { e in
            e[Self.userKey(name)] = nil
            e[Self.addressKey(address)] = nil
        }
    }
}
