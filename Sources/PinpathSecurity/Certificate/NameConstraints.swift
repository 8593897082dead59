/// The two subtrees of a name constraints extension; a field is `nil` when absent.
struct NameConstraints {
    let permitted: [GeneralName]?
    let excluded: [GeneralName]?
}
