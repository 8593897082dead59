/// Whether two configured patterns can match the same host, so that a policy set can refuse ambiguous ones.
extension HostPattern {
    /// How many labels a matching host may have in front of ``domain``.
    private func depths(includingSubdomains: Bool) -> ClosedRange<Int> {
        switch depth {
        case .exact: return includingSubdomains ? 0...Int.max : 0...0
        case .oneLabel: return includingSubdomains ? 1...Int.max : 1...1
        case .anyLabels: return 0...Int.max
        }
    }

    /// Whether some host matches both patterns. A host `k` labels under the other's domain is matched by
    /// both when its depth under this domain plus `k` is a depth the other allows.
    func overlaps(_ other: HostPattern, includingSubdomains mine: Bool, _ theirs: Bool) -> Bool {
        let (inner, innerDepths, outer, outerDepths) =
            domain.count >= other.domain.count
            ? (self, depths(includingSubdomains: mine), other, other.depths(includingSubdomains: theirs))
            : (other, other.depths(includingSubdomains: theirs), self, depths(includingSubdomains: mine))
        let extra: Int
        if inner.domain == outer.domain {
            extra = 0
        } else if inner.domain.hasSuffix("." + outer.domain) {
            extra = inner.domain.dropLast(outer.domain.count + 1).split(separator: ".").count
        } else {
            return false
        }
        let shiftedLower = innerDepths.lowerBound + extra
        let shiftedUpper = innerDepths.upperBound == Int.max ? Int.max : innerDepths.upperBound + extra
        return shiftedLower <= outerDepths.upperBound && outerDepths.lowerBound <= shiftedUpper
    }
}
