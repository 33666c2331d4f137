import ArgumentParser
import EditLog
import EditLogSync
import Foundation

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync the log with an ArcGIS FeatureServer: pull its changes, merge them field by field, push this log's changes.",
        discussion: """
            Pull: extractChanges since the last recorded server generation (query by the edit date field when the \
            service has no change tracking), after a paged snapshot of every feature on a first sync or when the \
            service's minServerGen is past the recorded generation; every query follows exceededTransferLimit. \
            Attachments included; each changed feature becomes a sync-pull session \
            (actor: the service's editor field), keyed by GlobalID, merged with this log's changes since the last sync \
            under --policy (last-in-wins: this log's upload is the last in and wins, as in ArcGIS; conflicts and decisions are MergeDecided events: `editlog conflicts`). Push: applyEdits \
            with useGlobalIds and rollbackOnFailure, parents before children, attachments with their GlobalIDs, only \
            what the service does not have already. Each run's state is a SyncPulled / SyncPushed event; a run \
            interrupted anywhere is finished by the next one without duplicates.
            """)

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: ArgumentHelp("The service root, e.g. http://127.0.0.1:8080/arcgis/rest/services/Trees/FeatureServer.", valueName: "url"))
    var service: String

    @OptionGroup var tokens: TokenOptions

    @Option(name: .long, help: ArgumentHelp("How a conflict is decided: last-in-wins (ArcGIS's rule: this log's changes since its last sync are the last in and win; a delete on either side stands), local-wins, remote-wins, or manual (left open for `editlog conflicts resolve`; everything else syncs).", valueName: "policy"))
    var policy: MergePolicy = .lastInWins

    @Flag(name: .customLong("dry-run"), help: "Print the plan (what would be pulled and pushed, the conflicts and their outcome) and write nothing.")
    var dryRun = false

    @Option(name: .long, help: "Who runs the sync (the actor of its decisions and state events).")
    var actor: String = EditLog.currentUser ?? "editlog-sync"

    @Option(name: .long, help: "Where the sync runs (the device of its decisions and state events).")
    var device: String = ProcessInfo.processInfo.hostName

    @OptionGroup var json: JSONFlag

    func validate() throws {
        if log.db.lowercased().hasPrefix("postgres") {
            throw ValidationError("sync runs on a device's log file; devices sync with a hub through its `editlog serve postgres://…` nodes")
        }
    }

    func run() async throws {
        try await handleErrors {
            let client = try tokens.client(url: service)
            var options = SyncOptions(policy: policy, dryRun: dryRun, actor: actor, device: device)
            // Crash tests: EDITLOG_SYNC_KILL_AT=<failpoint> kills this process (SIGKILL) there.
            if let at = ProcessInfo.processInfo.environment["EDITLOG_SYNC_KILL_AT"], !at.isEmpty {
                options.failpoint = { name in if name == at { kill(getpid(), SIGKILL) } }
            }
            if isatty(2) == 1 {
                let bar = ProgressBar(label: "snapshot")
                options.progress = { _, done, total in bar.update(done, total); if done >= total { bar.finish() } }
            }
            let r: SyncReport
            if dryRun {
                r = try await SyncEngine.plan(logAt: log.db, client: client, options: options)
            } else {
                let editLog = try EditLog.open(at: log.db)
                defer { editLog.close() }
                r = try await SyncEngine(log: editLog, client: client, options: options).run()
            }
            if json.json { out(r.json.serialized()); return }
            print(r)
        }
    }

    func print(_ r: SyncReport) {
        let verb = r.dryRun ? "would pull" : "pulled"
        out("\(r.dryRun ? "dry run: " : "")\(r.service) (\(r.snapshot ? "snapshot, then " : "")\(r.mode)\(r.fromServerGen.map { ", serverGen \($0)" } ?? "")\(r.toServerGen.map { " -> \($0)" } ?? ""))")
        out("\(verb) \(r.pulled.count) changes (\(r.pulledAttachments) attachments); \(r.conflicts.count) conflicts (policy \(r.policy.rawValue))"
            + (r.repulls > 0 ? "; pulled \(r.repulls + 1) times: the service changed features to push after a pull" : ""))
        if !r.pulled.isEmpty {
            out(table(["layer", "feature", "change", "fields"], r.pulled.map { [String($0.layer), $0.globalId, $0.kind, $0.fields.joined(separator: ",")] }))
        }
        if !r.conflicts.isEmpty {
            out(table(["conflict", "kind", "feature", "field", "local", "remote", "winner"], r.conflicts.map { c in
                [c.id, c.kind.rawValue, c.globalId, c.field ?? c.attachmentId ?? "", short(c.local.value, 24), short(c.remote.value, 24), c.winner.rawValue]
            }))
        }
        out("\(r.dryRun ? "would push" : "pushed") \(r.pushed.count) changes (\(r.pushedAttachments) attachments)")
        if !r.pushed.isEmpty {
            out(table(["layer", "feature", "change", "fields"], r.pushed.map { [String($0.layer), $0.globalId, $0.kind, $0.fields.joined(separator: ",")] }))
        }
        for k in r.notPushed { out("kept here, deleted on the service (not re-created): \(k.globalId)") }
        if !r.dryRun { out("\(r.eventsWritten) events written") }
    }
}
