import PinpathSupport

extension EndpointConfiguration {
    /// Every key of the endpoint with the value a probe uses, after `defaults:` and the built-in defaults, as
    /// `pinpath check-config --effective` shows them: the keys of its kind (``EndpointKey/kinds``), each as its row
    /// shows it, in the order of the configuration reference.
    ///
    /// Secrets stay out: a secret header value (from `${NAME}`, or a credential header) reads `[redacted]` with the
    /// variables it came from, a secret key (``EndpointKey/isSecret``) is only said to be set, and URLs lose their
    /// credentials.
    package var effectiveValues: [(key: String, value: JSONValue)] {
        var values = shownValues(of: EndpointKey.all) { $0.applies(to: kind) }
        if !withheldDefaults.isEmpty { values.append(("withheld_defaults", .array(withheldDefaults.map(JSONValue.string)))) }
        return values
    }

    /// What the rows of `keys` that `applies` (or that are shown on every kind) show of this endpoint, secrets
    /// redacted: the one rendering of an endpoint's and a module's values.
    func shownValues(of keys: [EndpointKey], where applies: (EndpointKey) -> Bool) -> [(key: String, value: JSONValue)] {
        var values: [(key: String, value: JSONValue)] = []
        for key in keys where applies(key) || key.isShownOnEveryKind {
            for (name, value) in key.shown(self) {
                values.append((name, key.isSecret && value != .null ? .string(RedactableValue.redacted) : value))
            }
        }
        return values
    }
}

extension ModuleConfiguration {
    /// The module's keys with the values its probes use, as ``EndpointConfiguration/effectiveValues`` shows an
    /// endpoint's (the same rows, secrets redacted): `kind` (or `from the target's scheme`), `targets` (`null`:
    /// the default refusals), then the keys a module may write that apply to its kind. A module without `kind:`
    /// shows the keys of every kind and the others it writes (but `send` and `servername`, which are read with each
    /// target's kind). `policies` lists none: the policies whose `hosts` match are chosen by each target's host;
    /// `policy` is the one the module names.
    package var effectiveValues: [(key: String, value: JSONValue)] {
        let allowed = targets.map { list in
            JSONValue.array((list.hosts.map(\.description) + list.networks.map(\.description)).map(JSONValue.string))
        }
        let head: [(key: String, value: JSONValue)] = [
            ("kind", .string(kind?.rawValue ?? "from the target's scheme")), ("targets", allowed ?? .null),
        ]
        return head
            + template.shownValues(of: EndpointKey.keys(in: .module)) { key in
                kind.map { key.applies(to: $0) } ?? (key.applies(to: nil) || writtenKeys.contains(key.name))
            }
    }
}
