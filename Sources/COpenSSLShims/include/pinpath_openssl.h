#ifndef PINPATH_OPENSSL_H
#define PINPATH_OPENSSL_H

// Typed pass-throughs for the OpenSSL 3.0 macros PinpathSecurity needs: Swift cannot call function-like
// macros, and does not import macros built from casts and other macros.
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/safestack.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// sk_X509_num is a function-like macro over OPENSSL_sk_num.
static inline int pinpath_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

// sk_X509_value is a function-like macro over OPENSSL_sk_value.
static inline X509 *pinpath_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }

// sk_X509_NAME_num and sk_X509_NAME_value are function-like macros (the CA names a server asks for).
static inline int pinpath_sk_X509_NAME_num(const STACK_OF(X509_NAME) *stack) { return sk_X509_NAME_num(stack); }
static inline X509_NAME *pinpath_sk_X509_NAME_value(const STACK_OF(X509_NAME) *stack, int index) {
    return sk_X509_NAME_value(stack, index);
}

// sk_X509_new_null is a function-like macro over OPENSSL_sk_new_null.
static inline STACK_OF(X509) *pinpath_sk_X509_new_null(void) { return sk_X509_new_null(); }

// sk_X509_push is a function-like macro over OPENSSL_sk_push; the stack does not take a reference.
static inline int pinpath_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) { return sk_X509_push(stack, certificate); }

// sk_X509_free is a function-like macro over OPENSSL_sk_free; it frees the stack, not the certificates.
static inline void pinpath_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

// OPENSSL_free is a function-like macro that adds the caller's file and line.
static inline void pinpath_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }

// BIO_get_mem_data is a function-like macro over BIO_ctrl.
static inline long pinpath_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

// sk_GENERAL_NAME_num is a function-like macro over OPENSSL_sk_num.
static inline int pinpath_sk_GENERAL_NAME_num(const STACK_OF(GENERAL_NAME) *stack) { return sk_GENERAL_NAME_num(stack); }

// sk_GENERAL_NAME_value is a function-like macro over OPENSSL_sk_value.
static inline GENERAL_NAME *pinpath_sk_GENERAL_NAME_value(const STACK_OF(GENERAL_NAME) *stack, int index) { return sk_GENERAL_NAME_value(stack, index); }

// SSL_set_tlsext_host_name is a function-like macro over SSL_ctrl (sets the SNI name a client sends).
static inline int pinpath_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }

// XN_FLAG_RFC2253 is a macro built from other macros, which Swift does not import.
static inline unsigned long pinpath_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

// SSL_OP_NO_RENEGOTIATION is a macro built from a cast (SSL_OP_BIT), which Swift does not import.
static inline uint64_t pinpath_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }

// The client options libcurl 7.88 sets on its contexts: macros built from casts (SSL_OP_BIT), which Swift does not import.
static inline uint64_t pinpath_SSL_OP_ALL(void) { return SSL_OP_ALL; }
static inline uint64_t pinpath_SSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t pinpath_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t pinpath_SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS(void) { return SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS; }

// SSL_CTX_set_session_cache_mode is a function-like macro over SSL_CTX_ctrl.
static inline long pinpath_SSL_CTX_set_session_cache_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_session_cache_mode(context, mode);
}

// sk_X509_CRL_new_null is a function-like macro over OPENSSL_sk_new_null.
static inline STACK_OF(X509_CRL) *pinpath_sk_X509_CRL_new_null(void) { return sk_X509_CRL_new_null(); }

// sk_X509_CRL_push is a function-like macro over OPENSSL_sk_push; the stack does not take a reference.
static inline int pinpath_sk_X509_CRL_push(STACK_OF(X509_CRL) *stack, X509_CRL *crl) { return sk_X509_CRL_push(stack, crl); }

// sk_X509_CRL_free is a function-like macro over OPENSSL_sk_free; it frees the stack, not the CRLs.
static inline void pinpath_sk_X509_CRL_free(STACK_OF(X509_CRL) *stack) { sk_X509_CRL_free(stack); }

// SSL_CTX_set_tlsext_status_type is a function-like macro over SSL_CTX_ctrl (asks servers for an OCSP staple).
static inline long pinpath_SSL_CTX_request_ocsp_staple(SSL_CTX *context) { return SSL_CTX_set_tlsext_status_type(context, TLSEXT_STATUSTYPE_ocsp); }

// SSL_set_tlsext_status_type is a function-like macro over SSL_ctrl (asks this connection's server for a staple).
static inline long pinpath_SSL_request_ocsp_staple(SSL *ssl) { return SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp); }

// SSL_CTX_set_tlsext_status_cb is a function-like macro over SSL_CTX_callback_ctrl with a cast callback.
static inline long pinpath_SSL_CTX_set_tlsext_status_cb(SSL_CTX *context, int (*callback)(SSL *, void *)) { return SSL_CTX_set_tlsext_status_cb(context, callback); }

// SSL_get_tlsext_status_ocsp_resp is a function-like macro over SSL_ctrl (the stapled response, or -1 without).
static inline long pinpath_SSL_get_tlsext_status_ocsp_resp(SSL *ssl, const unsigned char **response) { return SSL_get_tlsext_status_ocsp_resp(ssl, response); }

// sk_OPENSSL_STRING_num and sk_OPENSSL_STRING_value are function-like macros (the OCSP URLs X509_get1_ocsp returns).
static inline int pinpath_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *stack) { return sk_OPENSSL_STRING_num(stack); }
static inline const char *pinpath_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *stack, int index) {
    return sk_OPENSSL_STRING_value(stack, index);
}

// SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl (the metrics listener's `min_version`).
static inline int pinpath_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}

// The client CA names a TLS server lists in its CertificateRequest: a stack's macros.
static inline STACK_OF(X509_NAME) *pinpath_sk_X509_NAME_new_null(void) { return sk_X509_NAME_new_null(); }
static inline int pinpath_sk_X509_NAME_push(STACK_OF(X509_NAME) *stack, X509_NAME *name) { return sk_X509_NAME_push(stack, name); }

// SSL_CTX_add1_chain_cert is a macro over SSL_CTX_ctrl: the intermediates a TLS server sends.
static inline int pinpath_SSL_CTX_add1_chain_cert(SSL_CTX *context, X509 *certificate) {
    return (int)SSL_CTX_add1_chain_cert(context, certificate);
}

// The largest finite-field Diffie-Hellman prime a client context computes with, in bits. A TLS 1.2 server chooses
// its group: one of 10,000 bits (OpenSSL's own limit; not even prime) cost the client about 0.6 s of CPU, 8,192 bits
// about 0.2 s, 4,096 about 0.03 s, on the one thread that runs every probe's handshake. TLS 1.3's ffdhe6144 and
// ffdhe8192 (0.1 s for the latter) are not offered either.
#define PINPATH_MAXIMUM_DH_BITS 4096

// Refuses, in `context`'s handshakes, a server's Diffie-Hellman group beyond that size (queued as "modulus too
// large" before OpenSSL's own reason) and TLS 1.3's larger finite-field groups, and asks OpenSSL's security callback
// the rest. Returns 0 when the context's callback is not OpenSSL's default (one pinpath did not install), which it
// will not guess at.
int pinpath_SSL_CTX_limit_dh_groups(SSL_CTX *context);

#endif
