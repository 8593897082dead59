import Foundation

/// The readers a metrics exposition is held to: Prometheus' own (`promtool check metrics`, Debian's
/// `prometheus`) and the Python client's parsers (PyPI `prometheus_client`, installed into the test venv by
/// `install_test_python` in scripts/packages.sh), for the text format and OpenMetrics.
public enum ExpositionReaders {
    /// `promtool`, or `nil` when the prometheus package is missing.
    public static let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A Python that imports `prometheus_client`: `PINPATH_TEST_PYTHON` (scripts/test's venv), else `python3`.
    public static let python: String? = {
        let candidate = ProcessInfo.processInfo.environment["PINPATH_TEST_PYTHON"] ?? "python3"
        guard let result = try? Shell.run(["/usr/bin/env", candidate, "-c", "import sys, prometheus_client; print(sys.executable)"]),
            result.status == 0
        else { return nil }
        let path = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : path
    }()

    /// Whether both readers are here.
    public static var isAvailable: Bool { promtool != nil && python != nil }

    /// Why tests that need them are skipped, printed by Swift Testing.
    public static let unavailableReason =
        "needs promtool (Debian: prometheus) and python3 with prometheus_client (source scripts/packages.sh; install_test_python)"

    /// `promtool check metrics` on `text` (the text format): exit 0 when Prometheus reads it, with lint notes
    /// on standard output; a parse error is exit 1 with the error on standard error.
    public static func promtoolCheck(_ text: String) throws -> Shell.Result {
        guard let promtool else { throw ShellError(description: unavailableReason) }
        return try Shell.run([promtool, "check", "metrics"], input: text)
    }

    /// The values of `label` in every sample of `text` as `prometheus_client` parses it (its text-format
    /// parser, or its OpenMetrics one), in order of appearance, without repeats.
    /// - Throws: ``ShellError`` with the parser's exception when it refuses the text.
    public static func labelValues(_ label: String, in text: String, openMetrics: Bool = false) throws -> [String] {
        guard let python else { throw ShellError(description: unavailableReason) }
        let parser = openMetrics ? "prometheus_client.openmetrics.parser" : "prometheus_client.parser"
        let script = """
            import json, sys, importlib
            parser = importlib.import_module(sys.argv[1])
            values = []
            for family in parser.text_string_to_metric_families(sys.stdin.buffer.read().decode("utf-8")):
                for sample in family.samples:
                    value = sample.labels.get(sys.argv[2])
                    if value is not None and value not in values:
                        values.append(value)
            print(json.dumps(values))
            """
        let result = try Shell.run([python, "-c", script, parser, label], input: text)
        guard result.status == 0, let values = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String] else {
            throw ShellError(description: "\(parser) refused the exposition: \(result.stderr)")
        }
        return values
    }
}
