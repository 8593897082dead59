import Testing

@testable import PinpathAgent

@Suite("Configuration durations")
struct ConfigurationDurationTests {
    @Test(
        "Units, combinations and zero parse",
        arguments: [
            ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("2h", .seconds(7200)),
            ("14d", .seconds(14 * 86_400)), ("1h30m", .seconds(5400)), ("1m500ms", .milliseconds(60_500)), ("0s", .zero),
        ])
    func parses(text: String, expected: Duration) throws {
        #expect(try DurationSyntax.parse(text) == expected)
    }

    @Test(
        "Everything else is refused with what to write instead",
        arguments: [
            ("5 minutes", #""5 minutes" is not a duration (use 300s or 5m)"#),
            ("30 seconds", #""30 seconds" is not a duration (use 30s)"#),
            ("2 hours", #""2 hours" is not a duration (use 120m or 2h)"#),
            ("1 day", #""1 day" is not a duration (use 24h or 1d)"#),
            ("30", #""30" is not a duration (use 30s, or another unit: ms, m, h, d)"#),
            ("1.5s", #""1.5s" is not a duration (use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d)"#),
            ("", #""" is not a duration (use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d)"#),
            ("5x", #""5x" is not a duration (use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d)"#),
            ("30m1h", #""30m1h" is not a duration (use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d)"#),
            ("5s5s", #""5s5s" is not a duration (use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d)"#),
            ("-5s", #""-5s" is negative; a duration is 0 or more"#),
            ("99999999999999999999s", #""99999999999999999999s" is too long a duration"#),
            ("106751991168d", #""106751991168d" is too long a duration"#),
        ])
    func refuses(text: String, message: String) {
        #expect(throws: DurationSyntax.ParseError(message: message)) { try DurationSyntax.parse(text) }
    }

    @Test(
        "Formatting uses the largest exact unit",
        arguments: [
            (Duration.seconds(90), "90s"), (.seconds(300), "5m"), (.milliseconds(1500), "1500ms"), (.zero, "0s"),
            (.seconds(14 * 86_400), "14d"), (.seconds(7200), "2h"),
        ])
    func formats(duration: Duration, text: String) throws {
        #expect(DurationSyntax.format(duration) == text)
        #expect(try DurationSyntax.parse(text) == duration)
    }
}
