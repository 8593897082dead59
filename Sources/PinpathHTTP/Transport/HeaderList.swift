import CCurl
import Synchronization

/// A request's header fields as libcurl reads them (`CURLOPT_HTTPHEADER`), freed with its last user.
///
/// `@unchecked Sendable`: the list is never changed after it is built, and libcurl only reads it.
final class HeaderList: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<curl_slist>

    /// Checks `headers` (``HeaderFields/validate()``) and builds their list; `nil` when there is no line.
    /// - Parameter suppressingExpect: adds `Expect:` (no `100-continue`), for a request with a body.
    init?(_ headers: HeaderFields, suppressingExpect: Bool) throws(HTTPError) {
        try headers.validate()
        var lines = headers.fields.map { field in
            // An empty value is written `Name;`: libcurl drops `Name:` as a request to remove its own header.
            field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)"
        }
        if suppressingExpect { lines.append("Expect:") }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw HTTPError(.engineUnavailable, "libcurl cannot store a header (out of memory?)")
            }
            list = appended
        }
        guard let list else { return nil }
        pointer = list
    }

    deinit { curl_slist_free_all(pointer) }
}

/// The header list of a session's last request, for the next one with the same fields: most requests of a
/// session carry only its default headers, and checking and building the list cost more than the transfer's
/// other options. Equal fields give an equal list, already checked.
final class HeaderListCache: Sendable {
    private struct Entry: Sendable {
        let headers: HeaderFields
        let suppressingExpect: Bool
        let list: HeaderList?
    }

    private let last = Mutex<Entry?>(nil)

    /// The list for `headers`, built (and checked) only when they differ from the last request's.
    func list(for headers: HeaderFields, suppressingExpect: Bool) throws(HTTPError) -> HeaderList? {
        if let entry = last.withLock({ $0 }), entry.suppressingExpect == suppressingExpect, entry.headers == headers {
            return entry.list
        }
        let list = try HeaderList(headers, suppressingExpect: suppressingExpect)
        last.withLock { $0 = Entry(headers: headers, suppressingExpect: suppressingExpect, list: list) }
        return list
    }
}
