/// pinpath's version, as the CLI, the `User-Agent` and `agent.started` report it.
public enum PinpathVersion {
    public static let current = "0.1.0"
}
