/// Editor tracking as EditLog fills it (ArcGIS's `editFieldsInfo`): the event's actor and its recording time
/// (server time, as ArcGIS does). The one place that says which fields an event sets; the projector writes
/// them and `blame` attributes them.
extension LayerSchema {
    public func editorTrackingValues(of e: RecordedEvent, create: Bool) -> [String: JSONValue] {
        guard let info = editFieldsInfo else { return [:] }
        let ms = Timestamp.parse(e.recordedTime).map { JSONValue.int($0) } ?? .null
        var out: [String: JSONValue] = [:]
        if let f = field(named: info.editorField) { out[f.name] = .string(e.actor) }
        if let f = field(named: info.editDateField) { out[f.name] = ms }
        if create {
            if let f = field(named: info.creatorField) { out[f.name] = .string(e.actor) }
            if let f = field(named: info.creationDateField) { out[f.name] = ms }
        }
        return out
    }
}
