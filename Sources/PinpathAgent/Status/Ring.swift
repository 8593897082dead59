/// The last `capacity` elements appended, oldest first: once full, each new one takes the oldest's place, so a
/// record's history costs a fixed array and no shifting however long the agent runs.
struct Ring<Element: Sendable>: Sendable {
    let capacity: Int
    private var storage: [Element] = []
    /// The oldest element's index once the storage is full.
    private var start = 0

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    var count: Int { storage.count }

    mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[start] = element
            start = (start + 1) % capacity
        }
    }

    /// Calls `body` with each element, oldest first, without copying them.
    func forEach(_ body: (Element) -> Void) {
        for element in storage[start...] { body(element) }
        for element in storage[..<start] { body(element) }
    }

    /// The elements, oldest first.
    var elements: [Element] { Array(storage[start...] + storage[..<start]) }
}
