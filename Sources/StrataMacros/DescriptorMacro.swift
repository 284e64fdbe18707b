import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@_StrataDescriptor`, which `@Entity` puts on each stored property, relation and backlink:
/// declares the static query descriptor named like the property (`Order.amount`).
///
/// Arguments, all string literals written by `@Entity`: the owner type, its access prefix, then
/// one `name:field:N` or `name:backlink:N` per binding of the declaration.
public struct DescriptorMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard case let .argumentList(args)? = node.arguments else { return [] }
        let strings = args.compactMap { EntityModel.stringLiteral($0.expression) }
        guard strings.count == args.count, strings.count >= 3 else { return [] }
        let owner = strings[0], access = strings[1]
        return strings.dropFirst(2).compactMap { slot -> DeclSyntax? in
            let parts = slot.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1] == "field" || parts[1] == "backlink", let index = Int(parts[2]) else { return nil }
            let name = String(parts[0])
            return "\(raw: access)static let `\(raw: name)` = Strata.Property(\\\(raw: owner).`\(raw: name)`, \(raw: parts[1]): \(raw: index), name: \(raw: EntityMacro.literal(name)))"
        }
    }
}
