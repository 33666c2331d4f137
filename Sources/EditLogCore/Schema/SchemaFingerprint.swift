/// A log's schema fingerprint: the SHA-256 (hex) of the canonical serialization of its `SchemaDefined` payload, as
/// stored in the first event on stream `$schema`. Two logs with the same fingerprint were created from the same
/// service documents, web map and rules.
public enum SchemaFingerprint {
    public static func of(schemaPayload payload: JSONValue) -> String {
        Hex.encode(EventHash.sha256(payload.serializedBytes()))
    }
}
