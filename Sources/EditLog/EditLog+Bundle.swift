import EditLogBundle
import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogStore
import Foundation

@_exported import struct EditLogBundle.BundleLimits
@_exported import struct EditLogBundle.BundleManifest
@_exported import struct EditLogBundle.BundleContents
@_exported import class EditLogBundle.BundleReader
@_exported import struct EditLogBundle.BundleInspection
@_exported import struct EditLogBundle.BundleExportSummary
@_exported import enum EditLogBundle.BundleSince
@_exported import enum EditLogBundle.BundleDeflate
@_exported import enum EditLogBundle.BundleSignature

/// Change bundles: export a range of this log (with its blobs) to a file anyone can read with gzip and tar;
/// inspect and verify bundles without importing them.
extension EditLog {
    /// Writes the events after `since` up to `until` (a position or a time on `clock`; nil: the head), optionally only
    /// the named layers' features (system streams always), and every blob they reference, to `out`.
    /// With `peer`, the export is recorded so the next `since: .lastExport(peer:)` starts after it. `deflate` picks the
    /// library that compresses (the system libdeflate where it loads, by default; `.zlib` for the system zlib only).
    public func exportBundle(to out: String, since: BundleSince = .position(0), until: LogMoment? = nil, by clock: EventClock = .default,
                             layers: [String] = [], peer: String? = nil, signingKey: [UInt8]? = nil, overwrite: Bool = false,
                             blockSize: Int = BundleLayout.gzipBlockBytes, deflate: BundleDeflate = .auto,
                             progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleExportSummary {
        var options = BundleExportOptions(since: since, peer: peer, signingKey: signingKey, overwrite: overwrite, blockSize: blockSize, deflate: deflate)
        if let until {
            switch until {
            case .position(let p): options.until = p
            case .time:
                let p = try position(asOf: until, by: clock)
                guard p > 0 else { throw EditLogError(.notFound, "no event is at or before \(until) on the \(clock.rawValue) clock") }
                options.until = p
            }
        }
        if !layers.isEmpty {
            var ids = Set<Int>()
            for ref in layers { ids.insert(try schema.requireLayer(ref).id) }
            options.layers = (ids, layers)
        }
        return try BundleExport.run(store: store, to: out, options: options, progress: progress)
    }

    /// Who runs this process (`$USER`, `$LOGNAME`, else the effective user's account), for default actors.
    public static var currentUser: String? { BundleExport.currentUser() }

    /// What deflates the bundles this process exports by default: the system libdeflate's level where it loads, else
    /// zlib's.
    public static var bundleDeflater: String { BundleDeflate.auto.deflater }

    /// Reads a whole bundle, checking the container, checksums, the chain of its events, blob hashes and the
    /// signature (with `trust`, one of these keys must have signed it). Imports nothing.
    public static func verifyBundle(at path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default,
                                    progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleContents {
        let reader = try BundleReader(path: path, limits: limits)
        let total = reader.manifest.eventCount
        var done: Int64 = 0
        return try reader.read(trust: trust, event: { _ in
            done += 1
            if done % 1024 == 0 { progress?(done, total) }
        }, blob: { _ in })
    }

    /// The manifest and per-layer, per-type and per-actor counts of a bundle, checked as `verifyBundle` does.
    public static func inspectBundle(at path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default,
                                     progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleInspection {
        try BundleInspection.inspect(path: path, trust: trust, limits: limits, progress: progress)
    }

    /// The recorded exports to a peer, newest last: (from, to, bundle SHA-256, created at).
    public func bundleExports(peer: String) throws(EditLogError) -> [(from: Int64, to: Int64, sha256: String, createdAt: String)] {
        try store.read { db in try BundleExport.recorded(db, peer: peer) }
    }
}

extension EditLog {
    /// Imports a bundle in one transaction, all or nothing: every check of `verifyBundle` (a failed one rolls the
    /// import back), then the events merged under `policy` and the blobs stored. A bundle of another schema brings the
    /// layers, fields and relationships this log never had, recorded first as a `SchemaChanged` of this log (cause
    /// `import:<origin log id>`; `report.schemaChanges`); a field this log removed stays removed (the bundle's values
    /// for it stay in history, `report.unprojectedValues`); a field whose type differs is refused by name, nothing
    /// written (`Importer.importBundle`). Events already here (a second import, an overlapping bundle, this log's own
    /// events) are skipped.
    public func importBundle(at path: String, policy: MergePolicy = .lastInWins, trust: [[UInt8]] = [], actor: String, device: String,
                             limits: BundleLimits = .default, progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> (report: ImportReport, contents: BundleContents) {
        // The schema in force (another handle's change included) before, and the one the import may have recorded after.
        _ = try schemaInForce()
        let result = try Importer.importBundle(at: path, into: store, schema: schema, geocoder: geocoder, policy: policy, trust: trust, actor: actor, device: device,
                                               limits: limits, indexDeferral: indexDeferral, progress: progress)
        if result.report.schemaPosition != nil { _ = try schemaInForce() }
        return result
    }
}
