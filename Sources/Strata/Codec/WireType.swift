/// How a field's value is laid out after its tag (SPEC.md §Object codec). It is in every tag, so
/// a reader can skip a field it does not know (a removed property) without the schema. Raw
/// values reach disk: never renumber.
public enum WireType: UInt8, Sendable {
    /// LEB128 varint; signed integers zigzag-encoded first.
    case varint = 0
    /// 8 bytes little-endian (Double, Date).
    case fixed64 = 1
    /// A varint length, then that many bytes (String, Data, [UInt8]).
    case lengthDelimited = 2
    /// 4 bytes little-endian (Float).
    case fixed32 = 3
    /// No payload: the optional property holds nil.
    case null = 4
}
