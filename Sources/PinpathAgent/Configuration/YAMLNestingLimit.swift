// libyaml, imported for its event parser: counting events needs no node tree.
import CYAML

/// Refuses YAML nested deeper than the configuration could ever need, before it is composed. Yams built
/// the node tree recursively (and Swift frees it recursively), so a few thousand `[` overflowed the stack:
/// `pinpath check-config` and the agent's reload crashed on a 7 KB file. libyaml's parser keeps its state
/// on the heap, so counting its events is safe at any depth.
enum YAMLNestingLimit {
    /// The configuration itself is 5 levels deep; the rest is room for anchors and flow style.
    static let maximumDepth = 64

    /// Where (line and column from 1, as libyaml counts them) the first collection deeper than
    /// ``maximumDepth`` starts, or the first alias that would put its anchored node that deep; `nil` when none does, or when the text is not valid YAML before that
    /// point (the parser then reports the syntax error).
    static func firstTooDeep(in yaml: String) -> (line: Int, column: Int)? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        let bytes = Array(yaml.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> (line: Int, column: Int)? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var depth = 0
            // For each open collection, its tallest child so far, and its anchor; the height of each anchored
            // node, so that an alias counts as deep as what it stands for (composing pastes that subtree in).
            var open: [(tallestChild: Int, anchor: String?)] = []
            var anchoredHeights: [String: Int] = [:]
            func completed(height: Int) {
                guard !open.isEmpty else { return }
                open[open.count - 1].tallestChild = max(open[open.count - 1].tallestChild, height)
            }
            func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? { anchor.map { String(cString: $0) } }
            var event = yaml_event_t()
            while yaml_parser_parse(&parser, &event) == 1 {
                defer { yaml_event_delete(&event) }
                let position = (Int(event.start_mark.line) + 1, Int(event.start_mark.column) + 1)
                switch event.type {
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    depth += 1
                    if depth > maximumDepth { return position }
                    let anchor =
                        event.type == YAML_SEQUENCE_START_EVENT
                        ? name(event.data.sequence_start.anchor) : name(event.data.mapping_start.anchor)
                    open.append((0, anchor))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    depth -= 1
                    guard let collection = open.popLast() else { return nil }
                    let height = collection.tallestChild + 1
                    if let anchor = collection.anchor { anchoredHeights[anchor] = height }
                    completed(height: height)
                case YAML_SCALAR_EVENT:
                    if let anchor = name(event.data.scalar.anchor) { anchoredHeights[anchor] = 0 }
                case YAML_ALIAS_EVENT:
                    let height = name(event.data.alias.anchor).flatMap { anchoredHeights[$0] } ?? 0
                    if depth + height > maximumDepth { return position }
                    completed(height: height)
                case YAML_STREAM_END_EVENT:
                    return nil
                default:
                    break
                }
            }
            return nil
        }
    }
}
