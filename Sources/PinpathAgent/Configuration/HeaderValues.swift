import PinpathHTTP
import PinpathYAML

/// `headers:` as endpoints and `defaults:` give them: HTTP names, one-line values, `${NAME}` from the environment,
/// and which values are secret.
extension ConfigurationDecoder {
    /// `name: value` lines; `${NAME}` in values is read from the environment now, and the value is secret
    /// from then on. Names are checked as HTTP tokens and may not repeat in any case.
    func headers(_ node: Node, _ keyPath: String) -> [EndpointConfiguration.Header]? {
        guard let entries = namedEntries(node, keyPath) else { return nil }
        var seen: Set<String> = []
        var headers: [EndpointConfiguration.Header] = []
        for (name, key, value) in entries {
            let path = Self.keyPath(keyPath, name)
            do throws(HTTPError) {
                try HeaderFields(dictionaryLiteral: (name, "")).validate()
            } catch {
                report(.invalidValue, at: key, path, error.message)
                continue
            }
            guard seen.insert(name.lowercased()).inserted else {
                report(.duplicate, at: key, path, "the header \(name) is given twice (names are compared without regard to case)")
                continue
            }
            guard let template = string(value, path, "a header value") else { continue }
            guard let (text, variables) = expand(template, value, path) else { continue }
            guard !text.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                let origin = variables.isEmpty ? "" : " after ${\(variables.joined(separator: "}, ${"))} was read"
                report(.invalidValue, at: value, path, "the value contains CR, LF or NUL\(origin); a header value is one line")
                continue
            }
            let secret = Self.isSecretHeader(name: name, template: template)
            headers.append(.init(name: name, value: RedactableValue(text, isSecret: secret, variables: variables)))
        }
        return headers
    }

    /// Whether a header's value is secret (``RedactableValue/isSecret``): read from the environment, or a
    /// credential by its name (`HeaderFields.isCredential`). Such a default is also scoped (``EndpointDefaults``).
    static func isSecretHeader(name: String, template: String) -> Bool {
        template.contains("${") || HeaderFields.isCredential(name)
    }
}
