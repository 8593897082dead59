/// One check a chain must pass, as a small named value (swift-certificates' `VerifierPolicy`). The steps of a
/// ``SecurityPolicy`` evaluation (``TrustRules``) and the rules of a ``VerificationProfile`` (``ProfileRule``)
/// share this shape: each rule lives in its own file, and the order it runs in is one static list.
protocol VerifierRule<Subject, Reason>: Sendable {
    /// What the rule judges: a ``VerifiedPath`` for a profile rule, an ``EvaluationContext`` for a step of the
    /// policy's evaluation.
    associatedtype Subject
    /// What a failure carries for the report: a ``ProfileViolation`` or a ``TrustFailure``.
    associatedtype Reason: Sendable

    /// Judges `subject`. It is `inout` so that a step can leave what it found for the steps after it (the
    /// chain OpenSSL built); a profile rule only reads it.
    /// - Throws: ``SecurityError`` only when the check cannot run (OpenSSL failed); "no" is a result.
    func evaluate(_ subject: inout Subject) throws -> RuleResult<Reason>
}
