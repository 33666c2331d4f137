/// A log's schema fingerprint: the SHA-256 (hex) of the canonical serialization of its `SchemaDefined` payload, as
/// stored in the first event on stream `$schema`. Two logs with the same fingerprint were created from the same
/// service documents, web map and rules.
public enum SchemaFingerprint {
    public static func of(schemaPayload payload: JSONValue) -> String { of(canonicalPayload: payload.serializedBytes()) }

    /// The fingerprint of a schema event's canonical payload bytes.
    public static func of(canonicalPayload bytes: [UInt8]) -> String { Hex.encode(EventHash.sha256(bytes)) }

    /// The fingerprint of schema event `e`.
    public static func of(_ e: RecordedEvent) -> String { of(canonicalPayload: e.canonicalPayload) }
}
