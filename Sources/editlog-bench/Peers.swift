import Foundation
import GRDBSQLite

/// `--peers`: the same events through a peer event store — the Python `eventsourcing` library on SQLite
/// (tools/peers/eventsourcing_peer.py, pinned in tools/peers/requirements.txt, installed offline into
/// .build-peers/venv by tools/bench). The bench exports what the timed operation appended (each event's
/// stream, stream version, type and payload size, grouped by the log's transactions) as a JSON spec; the
/// peer script appends equivalent events with the same grouping and prints its timing.
struct PeerConfig: Codable, Sendable {
    var python: String
    var script: String
    /// The peer run is killed after this many seconds.
    var timeoutSeconds: Double = 900
}

enum Peers {
    struct Result: Decodable {
        var peer: String
        var version: String
        var python: String
        var sqlite: String
        var synchronous: String
        var seconds: Double
        var cpuSeconds: Double
        var events: Int
        var transactions: Int
        var payloadBytes: Int
        var streams: Int
        var preexistingStreams: Int
    }

    /// Writes the spec of the events after `after` in `logPath` and returns (path, events, transactions).
    static func writeSpec(_ ctx: BenchContext, scenario: String, logPath: String, after: Int64) throws -> (String, Int, Int) {
        let db = try RawDB(logPath, readonly: true)
        let s = try db.prepare("SELECT stream, stream_version, type, length(CAST(payload AS BLOB)) FROM events WHERE position > \(after) ORDER BY position")
        var streams: [String: Int] = [:], types: [String: Int] = [:], typeNames: [String] = []
        var out = "{\"scenario\":\"\(scenario)\",\"transactions\":[["
        var first = true, events = 0, transactions = 0, open = false
        while s.step() == SQLITE_ROW {
            let stream = s.text(0), type = s.text(2)
            let si: Int
            if let i = streams[stream] { si = i } else { si = streams.count; streams[stream] = si }
            let ti: Int
            if let i = types[type] { ti = i } else { ti = typeNames.count; types[type] = ti; typeNames.append(type) }
            if !first { out += open ? "," : ",[" }
            first = false
            open = true
            out += "[\(si),\(sqlite3_column_int64(s.handle, 1)),\(ti),\(sqlite3_column_int64(s.handle, 3))]"
            events += 1
            if type == "ScriptRecorded" { out += "]"; open = false; transactions += 1 }
        }
        if open { out += "]"; transactions += 1 }
        if events == 0 { out += "]" }
        let typeList = typeNames.map { "\"\($0)\"" }.joined(separator: ",")
        out += "],\"types\":[\(typeList)]}"
        let path = ctx.path("peer-\(scenario).json")
        try Data(out.utf8).write(to: URL(fileURLWithPath: path))
        return (path, events, transactions)
    }

    /// Runs the peer on the events the timed operation appended and returns the comparison row
    /// (EditLog's throughput / the peer's, goal ≥ 2x).
    static func compare(_ ctx: BenchContext, scenario: String, logPath: String, after: Int64, size: String,
                        seconds: Double, cpuSeconds: Double) throws -> Measurement {
        guard let cfg = ctx.peers else { throw RawError(description: "no peer configured") }
        let (spec, events, transactions) = try writeSpec(ctx, scenario: scenario, logPath: logPath, after: after)
        defer { try? FileManager.default.removeItem(atPath: spec) }
        let db = ctx.path("peer-\(scenario).sqlite")
        defer { ctx.remove(db) }
        ctx.note("peer: eventsourcing on SQLite appends the same \(events) events in \(transactions) transactions")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: cfg.python)
        p.arguments = [cfg.script, "--spec", spec, "--db", db]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let timer = DispatchSource.makeTimerSource()
        timer.schedule(deadline: .now() + cfg.timeoutSeconds)
        timer.setEventHandler { if p.isRunning { p.terminate() } }
        timer.resume()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        timer.cancel()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("PEER-RESULT ") }) else {
            throw RawError(description: "the peer \(cfg.script) failed (status \(p.terminationStatus); killed after \(Int(cfg.timeoutSeconds)) s if it ran that long)")
        }
        let r = try JSONDecoder().decode(Result.self, from: Data(line.dropFirst("PEER-RESULT ".count).utf8))
        guard r.events == events else { throw RawError(description: "the peer appended \(r.events) events, expected \(events)") }
        var m = Measurement(scenario: "\(scenario) vs eventsourcing", kind: .throughput, size: size, units: events, unitName: "ev",
                            seconds: seconds, cpuSeconds: cpuSeconds, goal: .peerRatioAtLeast(2))
        m.floorSeconds = r.seconds
        m.floorCpuSeconds = r.cpuSeconds
        m.floorDescription = "peer, not a floor: Python eventsourcing \(r.version) (Python \(r.python), SQLite \(r.sqlite)), PERSISTENCE_MODULE=eventsourcing.sqlite "
            + "on a file (WAL, synchronous=\(r.synchronous), application recorder with its notification log), appending the same \(r.events) events "
            + "(\(r.payloadBytes) payload bytes, each event's payload the same size as EditLog's) to \(r.streams) aggregates, one per stream, "
            + "with optimistic versions, one Application.save (one transaction) per \(scenario == "append-bulk" ? "batch of sessions" : "session") "
            + "(\(r.transactions) transactions); aggregates stay in memory (\(r.preexistingStreams) pre-existing ones created untimed); "
            + "the ratio is EditLog's throughput / the peer's"
        return m
    }
}
