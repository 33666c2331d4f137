import EditLog
import Foundation

/// ArcGIS's token service: `POST /arcgis/tokens/generateToken` (ArcGIS Server) and
/// `/arcgis/sharing/rest/generateToken` (clients that log in through a portal URL). Parameters as ArcGIS's:
/// `username`, `password`, `expiration` (minutes), `client` (`requestip`, `ip` with `ip=`, `referer` with
/// `referer=`; without it, `referer` where one is given, else `requestip`), `f`. Answers `{token, expires, ssl}`.
extension FeatureService {
    static let tokenFailure = "Unable to generate token."

    func generateToken(_ r: ServiceRequest, method: String) throws(ServiceError) -> JSONValue {
        guard let login = options.login else {
            throw ServiceError(code: 400, message: Self.tokenFailure, details: ["this server has no users file: it was started without --users"])
        }
        guard method == "POST" else {
            throw ServiceError(code: 405, message: Self.tokenFailure, details: ["generateToken takes POST only: a password must not travel in a URL"])
        }
        guard let name = r.params["username"], !name.isEmpty, let password = r.params["password"], !password.isEmpty else {
            throw ServiceError(code: 400, message: Self.tokenFailure, details: ["username and password are required"])
        }
        var minutes = Login.defaultMinutes
        if let e = r.params["expiration"], !e.isEmpty {
            guard let m = Int(e), m > 0 else { throw ServiceError(code: 400, message: Self.tokenFailure, details: ["expiration must be a positive number of minutes"]) }
            minutes = m
        }
        let referer = r.params["referer"].flatMap { $0.isEmpty ? nil : $0 }
        let binding: IssuedToken.Binding
        switch r.params["client"]?.lowercased() ?? (referer == nil ? "requestip" : "referer") {
        case "requestip": binding = .ip(r.address)
        case "ip":
            guard let ip = r.params["ip"], !ip.isEmpty else { throw ServiceError(code: 400, message: Self.tokenFailure, details: ["client=ip needs ip"]) }
            binding = .ip(ip)
        case "referer":
            guard let referer else { throw ServiceError(code: 400, message: Self.tokenFailure, details: ["client=referer needs referer"]) }
            binding = .referer(referer)
        case let other:
            throw ServiceError(code: 400, message: Self.tokenFailure, details: ["client must be requestip, ip or referer, not \"\(other)\""])
        }
        switch login.issue(name: name, password: password, binding: binding, minutes: minutes, address: r.address, now: options.clock()) {
        case .success(let t):
            return ["token": .string(login.signer.sign(t)), "expires": .int(t.expires), "ssl": false]
        case .failure(.invalidCredentials):
            throw ServiceError(code: 400, message: Self.tokenFailure, details: ["Invalid username or password."])
        case .failure(.throttled(let seconds)):
            throw ServiceError(code: 429, message: Self.tokenFailure,
                               details: ["Too many failed logins for this user name or address; try again in \(seconds) s."])
        }
    }
}
