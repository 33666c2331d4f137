import EditLog
import EditLogHub
import Foundation

extension LogOptions {
    /// The log a command works on: the file, or for a `postgres://` store the node's local copy of it in `--cache`,
    /// caught up to the store's head, whose writes reach the store before they commit (`HubNode`).
    func open(readonly: Bool = false) throws(EditLogError) -> EditLog {
        guard PostgresLocation.isPostgres(db) else { return try EditLog.open(at: db, readonly: readonly) }
        return try openNode().local
    }

    /// The hub node of a `postgres://` store, kept open until the process ends.
    func openNode() throws(EditLogError) -> HubNode {
        let node = try HubNode.open(try PostgresLocation(db), cacheDirectory: cacheDirectory)
        OpenNodes.shared.keep(node)
        return node
    }

    var cacheDirectory: String {
        if let cache { return cache }
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty { return (xdg as NSString).appendingPathComponent("editlog") }
        return (NSHomeDirectory() as NSString).appendingPathComponent(".cache/editlog")
    }
}

/// The nodes a command opened: alive while it runs (their local copies' gates call them).
final class OpenNodes: @unchecked Sendable {
    static let shared = OpenNodes()
    private let lock = NSLock()
    private var nodes: [HubNode] = []
    func keep(_ node: HubNode) { lock.withLock { nodes.append(node) } }
}
