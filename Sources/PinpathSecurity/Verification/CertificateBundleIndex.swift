import COpenSSL
import COpenSSLShims
import Glibc
import PinpathSupport
import Synchronization

/// The certificates of a PEM bundle found by subject without decoding them all: the file part of the system
/// store as ``ProfileSelection/auto`` asks it whether an anchor is public.
///
/// `X509_STORE_load_file` decodes every certificate of Debian's bundle and its key (about 14 ms, two thirds of
/// it OpenSSL 3's key decoder set-up), which a one-shot `pinpath audit` paid to ask about one or two names.
/// This index reads each block with OpenSSL's PEM reader, walks its DER only as far as the subject Name, and
/// files it under `X509_NAME_hash_ex` (the canonical-name hash a hashed directory's file names carry); a
/// look-up decodes only the candidates under the name's hash and keeps those whose subject compares equal
/// (`X509_NAME_cmp`): the certificates the loaded store's look-up (`X509_STORE_CTX_get1_certs`) would return.
///
/// What it cannot read as OpenSSL would makes it ``isComplete`` false, and the caller then also loads the file
/// as OpenSSL does: a damaged block, a certificate block with header lines, DER the walker cannot follow, a NUL
/// byte, a file that is not a regular file or is larger than ``maximumReadableFileSize``, or one that cannot be
/// read.
/// Blocks after a damaged one are still indexed (OpenSSL's loader drops the whole file there), so an oddity
/// can only add certificates to what a look-up finds, never take one away.
///
/// `Sendable`: the index is not changed after creation; decoded certificates are cached behind a mutex.
final class CertificateBundleIndex: AnchorLookup, Sendable {
    /// One certificate block: its DER and whether it carries trust settings after it (`TRUSTED CERTIFICATE`,
    /// decoded with `d2i_X509_AUX`).
    private struct Entry: Sendable {
        let der: [UInt8]
        let withTrustSettings: Bool
    }

    private let entries: [Entry]
    /// Entry positions by the `X509_NAME_hash_ex` of their subject.
    private let bySubjectHash: [UInt: [Int]]
    /// Entries decoded so far, by position: the agent asks about the same anchors at every probe.
    private let decoded = Mutex<[Int: Certificate]>([:])
    /// Whether every certificate block of the file was indexed; when not, a look-up must also consult the file
    /// as OpenSSL loads it.
    let isComplete: Bool
    /// How many certificates were indexed.
    var count: Int { entries.count }

    /// Reads and indexes the bundle at `path`. A missing file indexes nothing and is complete, as OpenSSL's
    /// loader adds nothing for it.
    init(contentsOf path: String) {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path)
        } catch {
            entries = []
            bySubjectHash = [:]
            isComplete = error.failure == .open(errno: ENOENT)
            return
        }
        var entries: [Entry] = []
        var bySubjectHash: [UInt: [Int]] = [:]
        // OpenSSL's loader reads the file through stdio, whose lines end at a NUL byte where this memory BIO's
        // do not: with one, what it sees is left to it.
        var complete = !bytes.contains(0)
        do {
            try forEachPEMBlock(in: bytes) { block, _ in
                // The labels PEM_X509_INFO_read_bio (X509_STORE_load_file's reader) decodes as certificates.
                let withTrustSettings = block.label == "TRUSTED CERTIFICATE"
                guard withTrustSettings || block.label == "CERTIFICATE" || block.label == "X509 CERTIFICATE" else { return }
                // Header lines may ask OpenSSL to decrypt the block first: leave such a block to OpenSSL.
                guard block.headers.isEmpty, let hash = Self.subjectHash(ofCertificate: block.der) else {
                    complete = false
                    return
                }
                bySubjectHash[hash, default: []].append(entries.count)
                entries.append(Entry(der: block.der, withTrustSettings: withTrustSettings))
            } damaged: { _ in
                complete = false
                return true
            }
        } catch {
            complete = false  // only an allocation failure throws here
        }
        self.entries = entries
        self.bySubjectHash = bySubjectHash
        isComplete = complete
    }

    /// The indexed certificates whose subject is `name` (`X509_NAME_cmp`), decoded.
    /// - Throws: ``SecurityError`` when OpenSSL cannot hash the name.
    func certificates(named name: OpaquePointer?) throws -> [Certificate] {
        guard let name else { return [] }
        var hashed: Int32 = 0
        let hash = X509_NAME_hash_ex(name, nil, nil, &hashed)
        guard hashed == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot hash a certificate name to look it up in the system bundle")
        }
        return (bySubjectHash[hash] ?? []).compactMap { position in
            guard let certificate = certificate(at: position) else { return nil }
            return X509_NAME_cmp(X509_get_subject_name(certificate.x509), name) == 0 ? certificate : nil
        }
    }

    /// The entry at `position`, decoded once; `nil` when OpenSSL cannot decode it (its loader would have
    /// dropped the whole file).
    private func certificate(at position: Int) -> Certificate? {
        if let cached = decoded.withLock({ $0[position] }) { return cached }
        let entry = entries[position]
        // As PEM_X509_INFO_read_bio decodes: bytes after the certificate (or its trust settings) are ignored.
        let x509 = entry.der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return entry.withTrustSettings ? d2i_X509_AUX(nil, &cursor, buffer.count) : d2i_X509(nil, &cursor, buffer.count)
        }
        guard let x509 else {
            _ = drainOpenSSLErrors()
            return nil
        }
        let certificate = Certificate(owning: x509)
        return decoded.withLock { cache in
            if let raced = cache[position] { return raced }
            cache[position] = certificate
            return certificate
        }
    }

    /// The `X509_NAME_hash_ex` of a DER certificate's subject, decoding the Name alone; `nil` when the bytes
    /// are not shaped as a certificate the walker can follow or the Name does not decode.
    static func subjectHash(ofCertificate der: [UInt8]) -> UInt? {
        guard let subject = subjectName(ofCertificate: der) else { return nil }
        guard let name = derDecoding(Array(der[subject]), { d2i_X509_NAME(nil, $0, $1) }, free: { X509_NAME_free($0) }) else {
            _ = drainOpenSSLErrors()
            return nil
        }
        defer { X509_NAME_free(name) }
        var hashed: Int32 = 0
        let hash = X509_NAME_hash_ex(name, nil, nil, &hashed)
        _ = drainOpenSSLErrors()
        return hashed == 1 ? hash : nil
    }

    /// Where a DER certificate's subject Name lies (its whole TLV): Certificate → TBSCertificate → `[0]`
    /// version (optional), serialNumber, signature, issuer, validity, **subject** (RFC 5280 §4.1). Definite
    /// lengths only; `nil` when a tag is not the one expected or a length runs past its container.
    static func subjectName(ofCertificate der: [UInt8]) -> Range<Int>? {
        var top = DERCursor(der, der.indices)
        guard let certificate = top.next(tag: 0x30) else { return nil }
        var inCertificate = DERCursor(der, certificate.content)
        guard let toBeSigned = inCertificate.next(tag: 0x30) else { return nil }
        var fields = DERCursor(der, toBeSigned.content)
        _ = fields.next(tag: 0xA0)  // version, absent for v1
        guard fields.next(tag: 0x02) != nil, fields.next(tag: 0x30) != nil, fields.next(tag: 0x30) != nil,
            fields.next(tag: 0x30) != nil, let subject = fields.next(tag: 0x30)
        else { return nil }
        return subject.whole
    }
}

/// Reads DER elements one after another within a range, without decoding their contents.
private struct DERCursor {
    /// One element: the range of its tag, length and content, and the range of its content.
    struct Element {
        let whole: Range<Int>
        let content: Range<Int>
    }

    private let bytes: [UInt8]
    private var position: Int
    private let end: Int

    init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        position = range.lowerBound
        end = range.upperBound
    }

    /// The next element when its (one-byte) tag is `tag`, moving past it; `nil`, without moving, for another
    /// tag, an indefinite or oversized length, or a length that runs past the range.
    mutating func next(tag: UInt8) -> Element? {
        guard position + 2 <= end, bytes[position] == tag else { return nil }
        let first = bytes[position + 1]
        var length = 0
        var header = 2
        if first >= 0x80 {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, position + 2 + count <= end else { return nil }  // 0x80: indefinite
            for byte in bytes[(position + 2)..<(position + 2 + count)] { length = length << 8 | Int(byte) }
            header += count
        } else {
            length = Int(first)
        }
        guard length <= end - position - header else { return nil }
        let element = Element(whole: position..<(position + header + length), content: (position + header)..<(position + header + length))
        position = element.whole.upperBound
        return element
    }
}
