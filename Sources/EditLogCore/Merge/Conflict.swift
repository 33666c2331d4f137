

/// What kind of concurrent change a conflict is (named from this log's side: local, then remote).
public enum ConflictKind: String, Sendable, Hashable, CaseIterable {
    /// The same field changed to different values on both sides.
    case field
    /// The same GlobalID created on both sides with different content (per field).
    case createCreate = "create-create"
    /// Updated here, deleted there.
    case updateDelete = "update-delete"
    /// Deleted here, updated there.
    case deleteUpdate = "delete-update"
    /// The same attachment renamed differently on both sides.
    case renameRename = "rename-rename"
    /// Renamed here, detached there.
    case renameDetach = "rename-detach"
    /// Detached here, renamed there.
    case detachRename = "detach-rename"
    /// A record deleted on one side is the parent of a record the other side related to it: the parent is kept.
    case orphan
    /// Edited here, and the field removed from the other side's schema (`SchemaChanged`): the value stays in history only.
    case fieldRemoved = "field-removed"
    /// A value here that the other side's narrowed domain no longer has (`SchemaChanged`): kept here, listed to resolve.
    case outsideDomain = "outside-domain"
}

/// One side's value and who wrote it (nil writer: the common base, or nothing).
public struct SideValue: Sendable, Hashable {
    public var value: JSONValue
    public var writer: Author?
    public init(value: JSONValue, writer: Author?) { self.value = value; self.writer = writer }
    public var json: JSONValue { .object(["value": value, "writer": writer?.json ?? .null]) }
    public init(json: JSONValue?) { value = json?["value"] ?? .null; writer = json?["writer"].flatMap(Author.init(json:)) }
}

/// A concurrent change an import met: base, local and remote, who wrote each, the policy and what won.
public struct Conflict: Sendable, Hashable {
    public var id: String
    public var kind: ConflictKind
    public var layer: Int
    public var globalId: String
    /// The field (for field and create-create conflicts), or nil.
    public var field: String?
    /// The attachment (for rename and detach conflicts), or nil.
    public var attachmentId: String?
    public var base: JSONValue
    public var local: SideValue
    public var remote: SideValue
    public var policy: MergePolicy
    /// What "last in" meant, under `last-in-wins` (nil in records written before the rule was recorded: by client time).
    public var rule: LastInRule?
    public var winner: Winner

    public init(id: String, kind: ConflictKind, layer: Int, globalId: String, field: String? = nil, attachmentId: String? = nil,
                base: JSONValue, local: SideValue, remote: SideValue, policy: MergePolicy, rule: LastInRule? = nil, winner: Winner) {
        self.id = id; self.kind = kind; self.layer = layer; self.globalId = globalId; self.field = field
        self.attachmentId = attachmentId; self.base = base; self.local = local; self.remote = remote
        self.policy = policy; self.rule = rule; self.winner = winner
    }

    /// The rule the decision applied, in words: the policy, and for `last-in-wins` what "last in" meant.
    public var ruleDescription: String {
        guard policy == .lastInWins else { return policy.rawValue }
        return "last-in-wins: " + (rule ?? .clientTime).description
    }

    /// The same concurrent pair of writes, whichever log recorded it: the feature, the field or attachment,
    /// and the two writers' events (unordered). Logs that exchange everything list the same keys.
    public var key: String {
        let ids = [local.writer?.eventId ?? "base", remote.writer?.eventId ?? "base"].sorted()
        return "\(globalId)|\(field ?? attachmentId ?? "")|\(ids[0])|\(ids[1])"
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id), "kind": .string(kind.rawValue), "layer": .int(Int64(layer)), "globalId": .string(globalId),
            "base": base, "local": local.json, "remote": remote.json, "policy": .string(policy.rawValue), "winner": .string(winner.rawValue),
        ]
        if let field { o["field"] = .string(field) }
        if let rule { o["rule"] = .string(rule.rawValue) }
        if let attachmentId { o["attachmentId"] = .string(attachmentId) }
        return .object(o)
    }

    public init(json: JSONValue) throws(EditLogError) {
        guard let id = json["id"]?.stringValue, let kind = json["kind"]?.stringValue.flatMap(ConflictKind.init(rawValue:)),
              let layer = json["layer"]?.intValue, let g = json["globalId"]?.stringValue,
              let policy = json["policy"]?.stringValue.flatMap(MergePolicy.init(rawValue:)),
              let winner = json["winner"]?.stringValue.flatMap(Winner.init(rawValue:)) else {
            throw EditLogError(.corrupt, "a conflict record lacks id, kind, layer, globalId, policy or winner")
        }
        self.init(id: id, kind: kind, layer: Int(layer), globalId: g, field: json["field"]?.stringValue,
                  attachmentId: json["attachmentId"]?.stringValue, base: json["base"] ?? .null,
                  local: SideValue(json: json["local"]), remote: SideValue(json: json["remote"]), policy: policy,
                  rule: json["rule"]?.stringValue.flatMap(LastInRule.init(rawValue:)), winner: winner)
    }
}
