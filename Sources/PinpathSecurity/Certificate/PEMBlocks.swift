import COpenSSL
import COpenSSLShims

/// One block of a PEM file as OpenSSL's reader returns it: its label, its header lines and its decoded DER.
struct PEMBlock {
    /// The label between `-----BEGIN ` and `-----` (`CERTIFICATE`).
    let label: String
    /// The header lines before the base64 (`Proc-Type: 4,ENCRYPTED` …), empty for most blocks.
    let headers: String
    /// The decoded base64.
    let der: [UInt8]
}

/// Walks the PEM blocks of `bytes` in order with `PEM_read_bio`, OpenSSL's own reader, so that a block is what
/// OpenSSL's loaders (`X509_STORE_load_file`, `PEM_X509_INFO_read_bio`) would see at that point.
///
/// - Parameters:
///   - visit: called with each block that decodes, numbered from 1.
///   - damaged: called with the number of a block OpenSSL cannot read (a bad base64 line, a missing or wrong
///     end line); it returns whether to go on with the blocks after it, or throws. Going on resumes after the
///     damaged block's `-----BEGIN` line (OpenSSL's loaders stop there); each resumption moves forward, so the
///     walk ends.
func forEachPEMBlock(
    in bytes: [UInt8], _ visit: (_ block: PEMBlock, _ number: Int) throws -> Void, damaged: (_ number: Int) throws -> Bool
) throws {
    _ = drainOpenSSLErrors()
    try bytes.withUnsafeBytes { buffer in
        var offset = 0  // where the BIO over the rest of `bytes` starts
        var number = 0
        while offset < buffer.count {
            guard let base = buffer.baseAddress, let bio = BIO_new_mem_buf(base + offset, Int32(clamping: buffer.count - offset)) else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot allocate a BIO for PEM text")
            }
            defer { BIO_free(bio) }
            while true {
                let before = buffer.count - BIO_ctrl_pending(bio)  // where this read starts, in `bytes`
                var name: UnsafeMutablePointer<CChar>?
                var header: UnsafeMutablePointer<CChar>?
                var data: UnsafeMutablePointer<UInt8>?
                var length = 0
                let read = PEM_read_bio(bio, &name, &header, &data, &length)
                defer {
                    pinpath_OPENSSL_free(name)
                    pinpath_OPENSSL_free(header)
                    pinpath_OPENSSL_free(data)
                }
                if read == 1, let name {
                    number += 1
                    let der = data.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
                    try visit(PEMBlock(label: String(cString: name), headers: header.map { String(cString: $0) } ?? "", der: der), number)
                    continue
                }
                // Running out of blocks reports "no start line"; any other reason is a damaged block.
                let last = ERR_peek_last_error()
                if last == 0 || ERR_GET_REASON(last) == PEM_R_NO_START_LINE {
                    _ = drainOpenSSLErrors()
                    return
                }
                number += 1
                let goOn = try damaged(number)  // OpenSSL's reasons are still queued for its error
                _ = drainOpenSSLErrors()
                guard goOn, let resumed = lineAfterBeginMarker(in: buffer, from: before) else { return }
                offset = resumed
                break
            }
        }
    }
}

/// The offset of the line after the first `-----BEGIN ` at or after `start`, or `nil` when there is none (or
/// it is the last line).
private func lineAfterBeginMarker(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
    let marker = Array("-----BEGIN ".utf8)
    let lastStart = bytes.count - marker.count
    guard start <= lastStart else { return nil }
    let isMarker = { (at: Int) in marker.indices.allSatisfy { bytes[at + $0] == marker[$0] } }
    guard let found = (start...lastStart).first(where: isMarker),
        let newline = bytes[(found + marker.count)...].firstIndex(of: UInt8(ascii: "\n")), newline + 1 < bytes.count
    else { return nil }
    return newline + 1
}
