import Foundation
import Hummingbird

/// Where a request carries its token: the four places ArcGIS Server reads one from, in this order —
///
/// 1. the `token` parameter (query string, form-urlencoded or multipart body);
/// 2. `X-Esri-Authorization: Bearer T` (Esri's JS and Python APIs);
/// 3. `Authorization: Bearer T`;
/// 4. the `agstoken` cookie (bmi-arcgis-restapi, and browsers signed in to ArcGIS Server).
///
/// The first place that holds a non-empty token decides: a request that names one explicitly (parameter or
/// header) is not refused for a stale cookie it also carries. An empty value (`token=`, `Bearer ` alone,
/// `agstoken=""`) counts as absent. Only the `Bearer` scheme is read from the two headers (a `Basic`
/// credential is not a token).
enum RequestToken {
    static func find(params: Parameters, headers: HTTPFields) -> String? {
        if let t = params["token"] { return t }
        for name in ["x-esri-authorization", "authorization"] {
            for field in headers where field.name.canonicalName == name {
                if let t = bearer(field.value) { return t }
            }
        }
        for field in headers where field.name.canonicalName == "cookie" {
            if let t = cookie("agstoken", in: field.value) { return t }
        }
        return nil
    }

    /// `Bearer T` (the scheme in any case) → `T`; nil for another scheme or an empty token.
    static func bearer(_ value: String) -> String? {
        let v = value.trimmingCharacters(in: .whitespaces)
        guard v.count > 7, v.prefix(7).lowercased() == "bearer " else { return nil }
        let t = v.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return t.isEmpty ? nil : t
    }

    /// The value of cookie `name` in a `Cookie` header (`a=1; agstoken=T; b="2"`): pairs split at `;`, spaces
    /// around names and values ignored, a value in double quotes unquoted, the name compared without regard to
    /// case; the first non-empty one. The value is taken as sent (no percent-decoding: tokens are opaque).
    static func cookie(_ name: String, in header: String) -> String? {
        for pair in header.split(separator: ";") {
            guard let eq = pair.firstIndex(of: "=") else { continue }
            guard pair[..<eq].trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() else { continue }
            var value = pair[pair.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            if !value.isEmpty { return value }
        }
        return nil
    }
}
