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
        var values: [(key: String, value: JSONValue)] = []
        for key in EndpointKey.all where key.applies(to: kind) || key.isShownOnEveryKind {
            for (name, value) in key.shown(self) {
                values.append((name, key.isSecret && value != .null ? .string(RedactableValue.redacted) : value))
            }
        }
        if !withheldDefaults.isEmpty { values.append(("withheld_defaults", .array(withheldDefaults.map(JSONValue.string)))) }
        return values
    }
}
