import COpenSSL
import CShims

/// Runs `body` with a fresh memory BIO and returns what it wrote, or `nil` when the BIO or the write failed.
func writingToMemoryBIO(_ body: (OpaquePointer) -> Bool) -> String? {
    guard let bio = BIO_new(BIO_s_mem()) else { return nil }
    defer { BIO_free(bio) }
    guard body(bio) else { return nil }
    var data: UnsafeMutablePointer<CChar>?
    let length = pinpath_BIO_get_mem_data(bio, &data)
    guard length >= 0, let data else { return length == 0 ? "" : nil }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
}

/// Calls an OpenSSL `i2d_*` function twice (length, then bytes), as its contract requires.
func derEncoding(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
    let length = encode(nil)
    guard length > 0 else { return nil }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor = buffer.baseAddress
        return encode(&cursor)
    }
    return written == length ? bytes : nil
}

/// Calls an OpenSSL `d2i_*` function over all of `bytes`; `nil` unless it parsed and consumed every byte
/// (trailing bytes mean the input was not one DER object of that type, and the object is freed with `free`).
func derDecoding(
    _ bytes: [UInt8], _ decode: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?,
    free: (OpaquePointer) -> Void
) -> OpaquePointer? {
    bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
        guard let start = buffer.baseAddress else { return nil }
        var cursor: UnsafePointer<UInt8>? = start
        guard let object = decode(&cursor, buffer.count) else { return nil }
        guard let end = cursor, end - start == buffer.count else {
            free(object)
            return nil
        }
        return object
    }
}
