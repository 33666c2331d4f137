import EditLog
import Hummingbird

/// Replicas: `createReplica`, `synchronizeReplica` and `unRegisterReplica` (a POST of them goes to the writer loop),
/// the caller's replicas and each one's info, and the answers kept for `responseUrl` and `resultUrl`.
struct ReplicasController {
    let service: FeatureService

    func addRoutes(to server: some RouterMethods<ServerRequestContext>) {
        server.getAndPost("createReplica") { request, context in
            try await service.run(context, write: request.method == .post) { s, r in try s.createReplica(r) }
        }
        server.getAndPost("synchronizeReplica") { request, context in
            try await service.run(context, write: request.method == .post) { s, r in try s.synchronizeReplica(r) }
        }
        server.getAndPost("unRegisterReplica") { request, context in
            try await service.run(context, write: request.method == .post) { s, r in s.out(try s.unRegisterReplica(r), r) }
        }
        server.getAndPost("replicas") { _, context in try await service.run(context, write: false) { s, r in s.out(try s.replicaList(r), r) } }
        server.getAndPost("replicas/:replica") { _, context in
            let id = context.pathParameter("replica") ?? ""
            return try await service.run(context, write: false) { s, r in s.out(try s.replicaInfo(id, r), r) }
        }
        for path: RouterPath in ["replicaResults/:a", "replicaResults/:a/:b"] {
            server.getAndPost(path) { _, context in
                let key = ["a", "b"].compactMap { context.pathParameter($0) }.joined(separator: "/").lowercased()
                return try await service.run(context, write: false) { s, r in
                    guard let v = s.replicaResults.get(key, user: r.user) else { throw ServiceError.notFound }
                    return s.out(v, r)
                }
            }
        }
    }
}
