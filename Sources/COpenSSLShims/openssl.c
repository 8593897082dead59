// SwiftPM builds a C target from its sources: most of this one is static inline functions in the header.
#include "pinpath_openssl.h"

#include <openssl/dh.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdatomic.h>

typedef int (*pinpath_security_callback)(const SSL *, const SSL_CTX *, int, int, int, void *, void *);

// OpenSSL's default security callback, the same function for every context; set by the first context limited.
static _Atomic(pinpath_security_callback) pinpath_default_security_callback;

static int pinpath_security_with_dh_ceiling(
    const SSL *ssl, const SSL_CTX *context, int operation, int bits, int nid, void *other, void *extra) {
    // TLS 1.2: asked with the server's DH key before any exponentiation.
    if (operation == SSL_SECOP_TMP_DH && other != NULL && EVP_PKEY_get_bits((const EVP_PKEY *)other) > PINPATH_MAXIMUM_DH_BITS) {
        ERR_raise(ERR_LIB_DH, DH_R_MODULUS_TOO_LARGE);
        return 0;
    }
    // TLS 1.3: the groups offered and accepted; the larger finite-field ones are left out.
    if ((operation == SSL_SECOP_CURVE_SUPPORTED || operation == SSL_SECOP_CURVE_SHARED || operation == SSL_SECOP_CURVE_CHECK)
        && (nid == NID_ffdhe6144 || nid == NID_ffdhe8192)) {
        return 0;
    }
    pinpath_security_callback next = atomic_load(&pinpath_default_security_callback);
    return next(ssl, context, operation, bits, nid, other, extra);
}

int pinpath_SSL_CTX_limit_dh_groups(SSL_CTX *context) {
    pinpath_security_callback current = SSL_CTX_get_security_callback(context);
    if (current == pinpath_security_with_dh_ceiling) return 1;
    if (current == NULL) return 0;
    pinpath_security_callback expected = NULL;
    if (!atomic_compare_exchange_strong(&pinpath_default_security_callback, &expected, current) && expected != current) return 0;
    SSL_CTX_set_security_callback(context, pinpath_security_with_dh_ceiling);
    return 1;
}
