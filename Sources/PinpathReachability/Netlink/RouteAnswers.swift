/// The kernel's answers to one batch of route look-ups, kept in the order the destinations were asked.
///
/// Two arrays rather than a dictionary: a snapshot without targets asks for two destinations on every
/// netlink event, and searching two is cheaper than hashing them. Batches longer than `searchedLength`
/// (many targets) get a dictionary of positions too.
struct RouteAnswers: Equatable {
    let destinations: [IPAddress]
    private(set) var answers: [RouteAnswer]
    private let positions: [IPAddress: Int]?
    private static let searchedLength = 8

    /// - Parameter answers: one per destination, in the same order.
    init(destinations: [IPAddress], answers: [RouteAnswer]) {
        precondition(destinations.count == answers.count, "one answer per destination")
        self.destinations = destinations
        self.answers = answers
        positions =
            destinations.count > Self.searchedLength
            ? Dictionary(destinations.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first }) : nil
    }

    /// The answer for `destination`, if it was asked for.
    subscript(destination: IPAddress) -> RouteAnswer? {
        let position = positions.map { $0[destination] } ?? destinations.firstIndex(of: destination)
        return position.map { answers[$0] }
    }

    /// Equal when the same destinations, in the same order, got the same answers.
    static func == (lhs: RouteAnswers, rhs: RouteAnswers) -> Bool {
        lhs.destinations == rhs.destinations && lhs.answers == rhs.answers
    }
}
