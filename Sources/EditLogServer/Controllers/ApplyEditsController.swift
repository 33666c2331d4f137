import EditLog
import Hummingbird

/// Editing features: the service's `applyEdits` (every layer, one transaction) and each layer's `applyEdits`,
/// `addFeatures`, `updateFeatures` and `deleteFeatures`. A POST goes to the writer loop (`LogHandles.submit`).
struct ApplyEditsController {
    let service: FeatureService

    func addRoutes(to server: some RouterMethods<ServerRequestContext>) {
        server.getAndPost("applyEdits") { request, context in
            try await service.run(context, write: request.method == .post) { s, r in s.out(try s.serviceApplyEdits(r), r) }
        }
        let modes: [(String, FeatureService.EditMode)] = [("applyEdits", .applyEdits), ("addFeatures", .add), ("updateFeatures", .update), ("deleteFeatures", .delete)]
        for (path, mode) in modes {
            server.getAndPost(RouterPath(":layer/\(path)")) { request, context in
                try await service.runOnLayer(context, write: request.method == .post) { s, layer, r in s.out(try s.applyEdits(layer, r, mode: mode), r) }
            }
        }
    }
}
