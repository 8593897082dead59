/// What the kernel did that led to a change. Raw values are the names used in JSON.
public enum ChangeReason: String, Sendable, Equatable, Codable {
    /// The state when monitoring started, or when a stream was subscribed.
    case initial
    case linkAdded = "link_added"
    case linkRemoved = "link_removed"
    /// An interface was brought administratively down or up.
    case linkDown = "link_down"
    case linkUp = "link_up"
    case carrierLost = "carrier_lost"
    case carrierGained = "carrier_gained"
    case addressAdded = "address_added"
    case addressRemoved = "address_removed"
    /// An address left or entered the tentative/DAD-failed state.
    case addressChanged = "address_changed"
    case routeAdded = "route_added"
    case routeRemoved = "route_removed"
    /// A policy routing rule was added or removed.
    case ruleChanged = "rule_changed"
    /// Events were lost (receive-buffer overrun) and everything was read again from the kernel.
    case resync
    /// A target's host name was resolved again.
    case dnsResolved = "dns_resolved"
    case dnsFailed = "dns_failed"
    /// A target was added or removed through the API.
    case targetAdded = "target_added"
    /// Something changed that none of the above describes (an interface renamed, say).
    case linkChanged = "link_changed"
}
