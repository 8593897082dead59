extension Agent {
    /// Probes the target a `/probe` request names with the module it names.
    ///
    /// A placeholder until modules exist (issue 26, P1a): with no module configured, every request names an unknown
    /// module, so every answer is `.invalid` and nothing is connected to.
    package func probe(_ request: TargetProbeRequest) async -> TargetProbeAnswer {
        .invalid("no modules are configured")
    }
}
