import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Entity`: conforms a final class or a struct to `Strata.Entity` by generating its schema and
/// a binary codec that reads and writes the stored properties directly.
///
/// The member role adds `init()` only when the type's own initializers hide the implicit one;
/// the extension role carries the conformance and reports every declaration error (once).
public struct EntityMacro: MemberMacro, ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        var diagnostics: [Diagnostic] = []
        guard let model = EntityModel.analyze(attribute: node, declaration: declaration, diagnostics: &diagnostics),
              model.needsNoArgumentInit else { return [] }
        return ["\(raw: model.accessPrefix)init() {}"]
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        var diagnostics: [Diagnostic] = []
        guard let model = EntityModel.analyze(attribute: node, declaration: declaration, diagnostics: &diagnostics) else {
            diagnostics.forEach(context.diagnose)
            return []
        }
        let conformance = protocols.isEmpty ? "" : ": Strata.Entity"
        let decl: DeclSyntax = """
            extension \(type.trimmed)\(raw: conformance) {
            \(raw: schema(model))
            \(raw: encoder(model))
            \(raw: decoder(model))
            }
            """
        return [decl.cast(ExtensionDeclSyntax.self)]
    }

    private static func schema(_ m: EntityModel) -> String {
        let properties = m.properties.map { p in
            let renamed = p.renamedFrom.map { ", renamedFrom: \(literal($0))" } ?? ""
            return "        Strata.PropertySchema(name: \(literal(p.name)), keyPath: \\\(m.typeName).\(p.name)\(renamed)),"
        }
        return """
            \(m.accessPrefix)static var _strataSchema: Strata.EntitySchema {
                Strata.EntitySchema(name: \(literal(m.entityName)), properties: [
            \(properties.joined(separator: "\n"))
                ])
            }
            """
    }

    private static func encoder(_ m: EntityModel) -> String {
        let lines = m.properties.enumerated().map { i, p in "    writer.write(self.\(p.name), field: \(i))" }
        return """
            \(m.accessPrefix)func _strataEncode(to writer: inout Strata.ObjectWriter) {
            \(lines.joined(separator: "\n"))
            }
            """
    }

    private static func decoder(_ m: EntityModel) -> String {
        let binding = m.kind == .finalClass ? "let" : "var"
        let loop: String
        if m.properties.isEmpty {
            loop = "    while try reader.nextField() != nil {}"
        } else {
            let cases = m.properties.enumerated().map { i, p in "        case \(i): try reader.read(&object.\(p.name))" }
            loop = """
                    while let field = try reader.nextField() {
                        switch field {
                \(cases.joined(separator: "\n"))
                        default: break
                        }
                    }
                """
        }
        return """
            \(m.accessPrefix)static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> \(m.typeName) {
                \(binding) object = \(m.typeName)()
                object.id = id
            \(loop)
                return object
            }
            """
    }

    private static func literal(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }
}
