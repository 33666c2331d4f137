import EditLog
import Hummingbird

/// Reading the service: the catalog (`rest/services`), the service's and layers' documents, `query` and
/// `queryRelatedRecords`.
struct QueryController {
    let service: FeatureService

    func addCatalogRoutes(to services: some RouterMethods<ServerRequestContext>) {
        services.getAndPost("") { _, context in
            try await service.run(context, write: false) { s, r in
                s.out(["currentVersion": FeatureService.currentVersion, "folders": [], "services": [["name": .string(s.options.serviceName), "type": "FeatureServer"]]], r)
            }
        }
    }

    func addRoutes(to server: some RouterMethods<ServerRequestContext>) {
        server.getAndPost("") { _, context in try await service.run(context, write: false) { s, r in s.out(try s.serviceRoot(), r) } }
        server.getAndPost("layers") { _, context in try await service.run(context, write: false) { s, r in s.out(try s.allLayers(), r) } }
        server.getAndPost(":layer") { _, context in
            try await service.runOnLayer(context, write: false) { s, layer, r in s.out(try s.layerDefinition(layer), r) }
        }
        server.getAndPost(":layer/query") { _, context in
            try await service.runOnLayer(context, write: false) { s, layer, r in try s.query(layer, r) }
        }
        server.getAndPost(":layer/queryRelatedRecords") { _, context in
            try await service.runOnLayer(context, write: false) { s, layer, r in try s.queryRelatedRecords(layer, r) }
        }
    }
}
