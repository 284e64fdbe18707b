/// Stored object bytes that do not decode. `Box` turns it into
/// ``StrataError/corruptObject(entity:id:reason:)`` with the entity and id.
public struct CodecFailure: Error, Sendable {
    public let reason: String

    @usableFromInline
    init(_ reason: String) { self.reason = reason }
}
