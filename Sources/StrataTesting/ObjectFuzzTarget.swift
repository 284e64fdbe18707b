import Strata
import StrataProbes

/// What the fuzzers (`Fuzz/`) and the corpus replay test feed arbitrary bytes to in the object
/// layer. Every input must end in a value or a typed error, never a crash. Underscored: a tool
/// for tests and fuzzers, not API an app calls at run time.
public enum _ObjectFuzzTarget: String, CaseIterable, Sendable {
    /// An object's bytes, decoded against an entity with one property of every stored type
    /// (every one indexed, so the index encoder runs too, with a composite index led by a
    /// to-one and a case-insensitive one).
    case object
    /// An entity record of the catalog (SPEC.md §11.2).
    case entityRecord

    /// Runs one input; false when an invariant broke (what parsed did not encode back to an
    /// equal record), which the fuzzer turns into a crash report.
    public func run(_ data: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .object:
            ObjectProbe.object(data)
            return true
        case .entityRecord:
            return ObjectProbe.entityRecord(data)
        }
    }
}
