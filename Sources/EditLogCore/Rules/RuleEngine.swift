/// Runs the dataset rules after a commit or a delete, returning derived events whose cause names
/// the rule and whose session is the triggering session.
public struct RuleEngine {
    public let world: any CurrentState
    public var geocoderOverride: (any ReverseGeocoder)?

    public init(world: any CurrentState, geocoderOverride: (any ReverseGeocoder)? = nil) {
        self.world = world
        self.geocoderOverride = geocoderOverride
    }

    public enum Trigger {
        /// A committed session; `before` holds the feature's attributes before the commit (empty on create).
        case committed(layer: Int, globalId: String, kind: SessionState.Kind, before: [String: JSONValue], session: String?)
        case deleted(layer: Int, globalId: String, attributes: [String: JSONValue], session: String?)
    }

    public func derive(after trigger: Trigger) throws -> [PendingEvent] {
        var out: [PendingEvent] = []
        let schema = world.schema
        for rule in schema.rules {
            switch (rule.kind, trigger) {
            case (.latestChildRollup(let relId, let parentLayer, let childLayer, let orderBy, let fields), _):
                let (layer, before, after, session): (Int, [String: JSONValue], [String: JSONValue], String?)
                switch trigger {
                case .committed(let l, let g, _, let b, let s):
                    guard l == childLayer else { continue }  // only a child's commit can change its parent's rollup
                    layer = l; before = b; session = s
                    after = try world.feature(layer: l, globalId: g)?.attributes ?? [:]
                case .deleted(let l, _, let attrs, let s):
                    layer = l; before = attrs; after = [:]; session = s
                }
                guard layer == childLayer, let parent = schema.layer(id: parentLayer), let child = schema.layer(id: childLayer),
                      let childSide = child.relationships.first(where: { $0.id == relId && $0.role == .destination }),
                      let fk = child.field(named: childSide.keyField)?.name else { continue }
                var keys: [JSONValue] = []
                for k in [before[fk], after[fk]] { if let k, !k.isNull, !keys.contains(k) { keys.append(k) } }
                for key in keys {
                    guard let g = key.stringValue.flatMap(GlobalID.normalize),
                          let p = try world.feature(layer: parent.id, globalId: g), !p.deleted else { continue }
                    let children = try world.features(layer: child.id, where: fk, equals: key)
                    guard let latest = children.max(by: { a, b in
                        let da = a.attributes[orderBy]?.doubleValue ?? -.infinity, db = b.attributes[orderBy]?.doubleValue ?? -.infinity
                        // Ties broken by GlobalID, not ObjectID: ObjectIDs are per log, and logs that merged the
                        // same children must derive the same value.
                        return da != db ? da < db : a.globalId < b.globalId
                    }) else { continue }
                    var changes = FieldChanges()
                    for copy in fields {
                        let raw = latest.attributes[copy.source] ?? .null
                        guard let f = parent.field(copy.target) else { continue }
                        // Written as the parent's field stores it; a value the parent's field refuses is not copied.
                        let v: JSONValue
                        if raw.isNull { v = .null } else if let n = try? FieldValidator.normalize(raw, for: f, layer: parent.name) { v = n } else { continue }
                        let o = p.attributes[f.name] ?? .null
                        if o != v { changes[f.name] = .init(old: o, new: v) }
                    }
                    if !changes.isEmpty {
                        let d = FeatureDerived(layer: parent.id, globalId: p.globalId, rule: rule.name, changes: changes, from: latest.globalId)
                        out.append(PendingEvent(stream: StreamName.feature(layer: parent.id, globalId: p.globalId), d, session: session,
                                                cause: Cause.rule(rule.name)))
                    }
                }
            case (.pointInPolygonLookup(let layer, let field, let polygonLayer, let polygonField), .committed(let l, let g, .create, _, let s)) where l == layer:
                guard let f = try world.feature(layer: l, globalId: g), let pt = Geometry.point(f.geometry) else { continue }
                let hit = try world.features(layer: polygonLayer, containing: pt.x, pt.y).first { Geometry.polygon($0.geometry, contains: pt.x, pt.y) }
                guard let value = hit?.attributes[polygonField], !value.isNull else { continue }
                try appendIfChanged(rule, f, field: field, value: value, session: s, polygon: hit!.globalId, into: &out)
            case (.reverseGeocode(let layer, let field, let table), .committed(let l, let g, .create, _, let s)) where l == layer:
                guard let f = try world.feature(layer: l, globalId: g), let pt = Geometry.point(f.geometry) else { continue }
                let geocoder: any ReverseGeocoder = geocoderOverride ?? table
                guard let address = geocoder.reverseGeocode(x: pt.x, y: pt.y) else { continue }
                try appendIfChanged(rule, f, field: field, value: .string(address), session: s, into: &out)
            default:
                continue
            }
        }
        return out
    }

    func appendIfChanged(_ rule: Rule, _ f: FeatureSnapshot, field: String, value: JSONValue, session: String?, from: String? = nil, polygon: String? = nil,
                         into out: inout [PendingEvent]) throws {
        guard let layer = world.schema.layer(id: f.layerId), let fs = layer.field(field),
              let v = try? FieldValidator.normalize(value, for: fs, layer: layer.name) else { return }
        let old = f.attributes[fs.name] ?? .null
        guard old != v else { return }
        let d = FeatureDerived(layer: f.layerId, globalId: f.globalId, rule: rule.name, changes: FieldChanges([fs.name: .init(old: old, new: v)]),
                               from: from, polygon: polygon)
        out.append(PendingEvent(stream: StreamName.feature(layer: f.layerId, globalId: f.globalId), d, session: session, cause: Cause.rule(rule.name)))
    }

}
