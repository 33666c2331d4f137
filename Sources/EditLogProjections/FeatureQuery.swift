import EditLogCore

/// A filter over a layer's features, as a tree (the feature service's `where` parses into one), compiled to SQL
/// by `FeatureFilterCompiler`: column names come from the layer's schema (never from the request text) and every
/// value is a bound parameter, so no text of a request ever reaches SQL.
public indirect enum FeaturePredicate: Sendable, Hashable {
    case and(FeaturePredicate, FeaturePredicate)
    case or(FeaturePredicate, FeaturePredicate)
    case not(FeaturePredicate)
    case compare(FeatureOperand, ComparisonOperator, FeatureOperand)
    case between(FeatureOperand, low: FeatureOperand, high: FeatureOperand, negated: Bool)
    case inList(FeatureOperand, [FeatureOperand], negated: Bool)
    case like(FeatureOperand, pattern: FeatureOperand, escape: String?, negated: Bool)
    case isNull(FeatureOperand, negated: Bool)

    public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    }
}

/// One side of a comparison: a field of the layer, a literal, or UPPER/LOWER of an operand.
public indirect enum FeatureOperand: Sendable, Hashable {
    case field(String)
    case value(JSONValue)
    case upper(FeatureOperand)
    case lower(FeatureOperand)
}

/// What `queryFeatures` and friends select: the live features of a layer matching a predicate and/or
/// ObjectIDs, in an order, a page at a time.
public struct FeatureQuery: Sendable {
    public var predicate: FeaturePredicate?
    public var objectIds: [Int64]?
    public var orderBy: [(field: String, descending: Bool)]
    public var offset: Int
    public var limit: Int?

    public init(predicate: FeaturePredicate? = nil, objectIds: [Int64]? = nil, orderBy: [(field: String, descending: Bool)] = [], offset: Int = 0, limit: Int? = nil) {
        self.predicate = predicate; self.objectIds = objectIds; self.orderBy = orderBy; self.offset = offset; self.limit = limit
    }
}
