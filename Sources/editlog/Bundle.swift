import ArgumentParser
import EditLog
import Foundation

struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Change bundles: a range of the log and its attachments in one file (tar in gzip members; schemas/bundle.md).",
        subcommands: [BundleExportCommand.self, BundleImportCommand.self, BundleInspectCommand.self, BundleVerifyCommand.self])
}

/// `--trust` key files, read.
func trustedKeys(_ files: [String]) throws -> [[UInt8]] {
    var keys: [[UInt8]] = []
    for f in files { keys.append(try BundleSignature.readKeyFile(f, as: .publicKey)) }
    return keys
}
