import EditLog
import EditLogServer
import Foundation

/// The sync scenario's hub: `editlog serve`'s application over a copy of the base log, in a process of its own
/// (`editlog-bench --serve-hub PATH`), as a hub is another machine. Its memory is then not in the peak RSS of
/// the device's sync. With `recordTrees`, the hub first records one session on each of that many trees.
enum SyncHub {
    static let token = "bench-token"
    static let maxRecordCount = ServerOptions(serviceName: "Hub").maxRecordCount

    static func options(port: Int) -> ServerOptions {
        var options = ServerOptions(serviceName: "Hub")
        options.tokens = [token: "bench_hub"]
        options.host = "127.0.0.1"
        options.port = port
        options.maxRequestBytes = 1 << 30
        return options
    }

    /// The edits the hub records on each tree: two fields people edit (not the rollup's DBH and Condition,
    /// which each side derives).
    static func edits(_ n: Int) -> [(field: String, value: JSONValue)] {
        [("PlantedBy", .string("crew \(n % 97)")), ("SiteWidth", .double(Double(n % 13) + 0.5))]
    }

    /// The child's side: records (when asked), serves, prints `HUB-PORT n` and serves until it is terminated.
    static func serve(path: String, recordTrees: Int, port: Int, ctx: BenchContext) throws {
        let clock = StepClock(start: 1_781_000_000_000, step: 1)
        let hub = try EditLog.open(at: path, clock: clock, ids: UUIDv7Generator(clock: clock, seed: ctx.seed &+ 21))
        if recordTrees > 0 {
            let workload = Workload(fixture: try ctx.fixture(), seed: ctx.seed &+ 23)
            try workload.adopt(hub)
            try workload.recordEdits(hub, trees: workload.trees.prefix(recordTrees), label: "bench-sync", values: edits)
        }
        let app = makeApplication(log: hub, options: options(port: port)) { port in
            FileHandle.standardOutput.write(Data("HUB-PORT \(port)\n".utf8))
        }
        let server = UncheckedBody { try await app.runService() }
        try SyncScenario.blocking { try await server.body() }
    }

    /// The parent's side: a running hub child and its feature service URL. A device's sync state is keyed by the
    /// service's URL, so a hub started again for the same device is given the port of the first (`port`).
    final class Child {
        let process: Process
        let port: Int
        let url: String

        init(path: String, recordTrees: Int, port: Int = 0, ctx: BenchContext) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: BenchContext.executablePath)
            p.arguments = ["--serve-hub", path, "--record-trees", String(recordTrees), "--hub-port", String(port), "--seed", String(ctx.seed), "--fixtures", ctx.fixtureDir]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            // The first line the child prints is its port; anything else, or its end, is a failure.
            var text = Data()
            while !text.contains(UInt8(ascii: "\n")) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text.append(chunk)
            }
            let line = String(decoding: text, as: UTF8.self).split(separator: "\n").first ?? ""
            guard line.hasPrefix("HUB-PORT "), let bound = Int(line.dropFirst("HUB-PORT ".count)) else {
                p.terminate()
                p.waitUntilExit()
                throw RawError(description: "the hub process (--serve-hub \(path)) did not start: \(line)")
            }
            process = p
            self.port = bound
            url = "http://127.0.0.1:\(bound)/arcgis/rest/services/Hub/FeatureServer"
        }

        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
        }

        deinit { stop() }
    }
}
