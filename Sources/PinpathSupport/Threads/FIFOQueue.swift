/// Elements in arrival order, taken from the front without moving the others: the queue of waiting work in
/// ``BlockingPool`` and in the agent's pattern-search lanes. Not synchronized: its owner's lock guards it.
package struct FIFOQueue<Element> {
    // Taken elements are set to nil, so that a queue that never empties does not keep them alive.
    private var elements: [Element?] = []
    private var head = 0

    /// An empty queue.
    package init() {}

    /// How many elements wait.
    package var count: Int { elements.count - head }

    /// Adds `element` at the back.
    package mutating func append(_ element: Element) { elements.append(element) }

    /// Takes the front element, or `nil` when none waits.
    package mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head]
        elements[head] = nil
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        }
        return element
    }

    /// Takes every element, front first.
    package mutating func removeAll() -> [Element] {
        defer {
            elements = []
            head = 0
        }
        return elements[head...].compactMap { $0 }
    }
}
