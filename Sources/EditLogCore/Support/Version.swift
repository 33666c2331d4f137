/// This build's version, as bundles name their creator ("editlog 0.1.0").
public enum EditLogVersion {
    public static let current = "0.1.0"
}
