import EditLog
import Hummingbird

/// Login: ArcGIS's token service (`tokens/generateToken`, and `sharing/rest/generateToken` for clients that log in
/// through a portal URL) and the `info` documents that say where it is. The token service is added before
/// `AuthenticationMiddleware`: a login is not refused for a stale token it carries.
struct LoginController {
    let service: FeatureService

    func addTokenRoutes(to group: some RouterMethods<ServerRequestContext>) {
        for path: RouterPath in ["tokens/generateToken", "sharing/rest/generateToken"] {
            group.getAndPost(path) { request, context in
                // Off the event loop: checking a password is PBKDF2's deliberate work.
                let method = request.method.rawValue
                return try await service.run(context, write: false, followSchema: false) { s, r in s.out(try s.generateToken(r, method: method), r) }
            }
        }
    }

    func addInfoRoutes(to group: some RouterMethods<ServerRequestContext>) {
        group.getAndPost("sharing/rest/info") { _, context in
            try await service.run(context, write: false) { s, r in s.out(s.restInfo(r, tokensAt: "/sharing/rest/generateToken"), r) }
        }
        group.getAndPost("rest/info") { _, context in
            try await service.run(context, write: false) { s, r in s.out(s.restInfo(r, tokensAt: "/tokens/generateToken"), r) }
        }
    }
}
