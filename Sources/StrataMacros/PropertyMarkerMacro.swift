import SwiftSyntax
import SwiftSyntaxMacros

/// `@Transient`, `@Renamed(from:)`, `@Index`, `@Unique` and `@DeleteRule`: markers that `@Entity` reads from the property they
/// annotate. On their own they expand to nothing.
public struct PropertyMarkerMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        if !declaration.is(VariableDeclSyntax.self) {
            context.diagnose(.init(node: node, message: EntityDiagnostic.markerOnNonProperty(node.attributeName.trimmedDescription)))
        }
        return []
    }
}
