import EditLog
import Hummingbird

/// `extractChanges`: what changed between two generations, for a service with change tracking.
struct ExtractChangesController {
    let service: FeatureService

    func addRoutes(to server: some RouterMethods<ServerRequestContext>) {
        server.getAndPost("extractChanges") { _, context in
            try await service.run(context, write: false) { s, r in
                guard s.options.changeTracking else {
                    throw ServiceError(code: 400, message: "Requested operation is not supported by this service.", details: ["extractChanges: this service has no change tracking; use a replica"])
                }
                return try s.extractChanges(r)
            }
        }
    }
}
