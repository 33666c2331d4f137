import ArgumentParser
import EditLog
import Foundation

extension BundleDeflate: ExpressibleByArgument {}

struct BundleExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the events in a range, and every attachment they reference, to a bundle file.",
        discussion: """
            --since is exclusive (a position, last-export:<peer> for after what the last --peer export sent, from the start when nothing was sent to it yet, or \
            bundle:<file> for after that bundle's last position; it must come from this log, and is read and checked whole first, \
            as bundle verify does, and its last event must be this log's event at that position); --until is inclusive \
            (a position or an ISO-8601 time on the --by clock; default: the last event). --layer keeps the named \
            layers' features (system streams stay). The file is written as <out>.partial and renamed when complete.
            """)

    @OptionGroup var log: LogOptions

    @Option(name: .customLong("out"), help: "The bundle file to write.")
    var outPath: String

    @Option(name: .long, help: ArgumentHelp("Start after this: a position, last-export:<peer> or bundle:<file>.", valueName: "position|last-export:PEER|bundle:FILE"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("The last position, or an ISO-8601 time (the last event at or before it).", valueName: "position|time"))
    var until: String?

    @OptionGroup var clock: ClockOption

    @Option(name: .long, help: "Only this layer's features (name or id); repeat for several.")
    var layer: [String] = []

    @Option(name: .long, help: "Record this export for the peer, so --since last-export:<peer> continues after it.")
    var peer: String?

    @Option(name: .long, help: "Sign SHA256SUMS with this Ed25519 private key file (editlog keys generate).")
    var sign: String?

    @Flag(name: .long, help: "Replace an existing bundle file.")
    var force = false

    @Option(name: .long, help: ArgumentHelp("The library that deflates: libdeflate where the system has it, else zlib (auto); the system zlib only (zlib); "
                                            + "libdeflate or an error (libdeflate). The format is the same; zlib is about a third slower and 6% larger.",
                                            valueName: "auto|zlib|libdeflate"))
    var deflate: BundleDeflate = .auto

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if let since, BundleSince(argument: since) == nil {
            throw ValidationError("--since \"\(since)\" is neither a position, last-export:<peer> nor bundle:<file>")
        }
        if let until, case .position(let u) = try auditPoint(until, "--until"), case .position(let f)? = since.flatMap(BundleSince.init(argument:)), f > u {
            throw ValidationError("--since \(f) is after --until \(u): the range is empty the wrong way round")
        }
        if let peer, peer.isEmpty || peer.contains(where: { $0.isNewline }) { throw ValidationError("--peer needs a name") }
        if let peer, !layer.isEmpty {
            throw ValidationError("--peer \(peer) with --layer: the next last-export:\(peer) would start after this export, and the other layers' "
                                  + "events of its range would never be sent; export every layer to a peer, or leave out --peer")
        }
        if case .lastExport(let p)? = since.flatMap(BundleSince.init(argument:)), let peer, p != peer {
            warn("--since last-export:\(p) with --peer \(peer): the range continues \(p)'s exports but is recorded for \(peer)")
        }
    }

    func run() throws {
        try handleErrors {
            let key = try sign.map { try BundleSignature.readKeyFile($0, as: .privateKey) }
            if let key { _ = try BundleSignature.publicKey(ofPrivate: key) }
            // Read-only unless the export is recorded for a peer: an export writes nothing else to the log (and so
            // does not migrate a log of an earlier version either).
            let editLog = try log.open(readonly: peer == nil)
            defer { editLog.close() }
            let bar = ProgressBar(label: "export")
            let s: BundleExportSummary
            do {
                s = try editLog.exportBundle(to: outPath, since: since.flatMap(BundleSince.init(argument:)) ?? .position(0),
                                             until: try until.map { try auditPoint($0, "--until") }, by: clock.clock, layers: layer,
                                             peer: peer, signingKey: key, overwrite: force, deflate: deflate, progress: bar.update)
            } catch { bar.finish(); throw error }
            bar.finish()
            for m in s.missingBlobs { warn("blob \(m) is referenced but not stored in this log: left out of the bundle") }
            if json.json {
                out(s.json.serialized())
                return
            }
            let m = s.manifest
            if m.eventCount == 0 {
                out("wrote \(s.path): an empty bundle (no events after position \(m.fromPosition) up to \(m.toPosition)\(m.layers == nil ? "" : " in the chosen layers"))")
            } else {
                out("wrote \(s.path): \(m.eventCount) events (positions \(m.fromPosition + 1)...\(m.toPosition)), \(m.blobCount) \(m.blobCount == 1 ? "blob" : "blobs") (\(m.blobBytes) bytes)")
            }
            out("\(s.bytes) bytes, sha256 \(s.sha256)\(key == nil ? "" : ", signed")\(s.peer.map { ", recorded as sent to \($0)" } ?? "")")
        }
    }
}
