import COpenSSL
import COpenSSLShims
import FoundationEssentials
import Glibc

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

/// An ASN.1 time (a certificate's validity, an OCSP response's dates) as a `Date`, or `nil` when OpenSSL cannot
/// read it. Wraps `ASN1_TIME_to_tm`.
func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
    var parts = tm()
    guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
    return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
}

/// The text of a 4- or 16-byte IP address as `inet_ntop` writes it (dotted decimal; RFC 5952 for IPv6), or `nil`
/// for another length. Wraps `inet_ntop`.
func ipAddressText(_ bytes: UnsafeRawBufferPointer) -> String? {
    guard bytes.count == 4 || bytes.count == 16, let base = bytes.baseAddress else { return nil }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    guard inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, base, &buffer, socklen_t(buffer.count)) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
