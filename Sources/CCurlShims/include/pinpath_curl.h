#ifndef PINPATH_CURL_H
#define PINPATH_CURL_H

// Typed pass-throughs for libcurl's variadic functions (curl_easy_setopt, curl_easy_getinfo,
// curl_multi_setopt, curl_share_setopt), which Swift cannot call. One setter per argument type, and one per
// callback kind so that the compiler checks each callback's signature.
#include <curl/curl.h>

// libcurl is loaded at run time (curl.c): NULL once it is usable, else why not. Call it before any curl_*
// function; the request core does (CurlRuntime).
const char *pinpath_curl_load(void);

// libcurl's variadic functions, found by pinpath_curl_load().
extern CURLcode (*pinpath_curl_easy_setopt)(CURL *, CURLoption, ...);
extern CURLcode (*pinpath_curl_easy_getinfo)(CURL *, CURLINFO, ...);
extern CURLMcode (*pinpath_curl_multi_setopt)(CURLM *, CURLMoption, ...);
extern CURLSHcode (*pinpath_curl_share_setopt)(CURLSH *, CURLSHoption, ...);

static inline CURLcode pinpath_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return pinpath_curl_easy_setopt(handle, option, value);
}
static inline CURLcode pinpath_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return pinpath_curl_easy_setopt(handle, option, value);
}
static inline CURLcode pinpath_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return pinpath_curl_easy_setopt(handle, option, value);
}

// CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION and CURLOPT_READFUNCTION share this shape.
typedef size_t (*pinpath_curl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode pinpath_curl_set_data_callback(CURL *handle, CURLoption option, pinpath_curl_data_callback callback) {
    return pinpath_curl_easy_setopt(handle, option, callback);
}

// CURLOPT_SSL_CTX_FUNCTION: called with the SSL_CTX before each new TLS connection.
typedef CURLcode (*pinpath_curl_ssl_ctx_callback)(CURL *handle, void *ssl_ctx, void *context);
static inline CURLcode pinpath_curl_set_ssl_ctx_callback(CURL *handle, pinpath_curl_ssl_ctx_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, callback);
}

// CURLOPT_OPENSOCKETFUNCTION: sees each resolved address before connect(); CURL_SOCKET_BAD skips it.
typedef curl_socket_t (*pinpath_curl_open_socket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode pinpath_curl_set_open_socket_callback(CURL *handle, pinpath_curl_open_socket_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

// CURLOPT_SEEKFUNCTION: rewinds a streamed body when libcurl must send it again.
typedef int (*pinpath_curl_seek_callback)(void *context, curl_off_t offset, int origin);
static inline CURLcode pinpath_curl_set_seek_callback(CURL *handle, pinpath_curl_seek_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}

// CURLOPT_XFERINFOFUNCTION: the transfer's byte counts, called often while it runs; non-zero aborts it.
static inline CURLcode pinpath_curl_set_xferinfo_callback(CURL *handle, curl_xferinfo_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

// CURLOPT_DEBUGFUNCTION: libcurl's informational texts (with CURLOPT_VERBOSE), read for what it reports no other way.
static inline CURLcode pinpath_curl_set_debug_callback(CURL *handle, curl_debug_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, callback);
}

// CURLPAUSE_CONT is a macro of macros, which Swift does not import.
static const int pinpath_curl_pause_continue = CURLPAUSE_CONT;

// CURLOPT_PREREQFUNCTION: called once a connection (new or reused) is ready, before the request is sent.
static inline CURLcode pinpath_curl_set_prereq_callback(CURL *handle, curl_prereq_callback callback) {
    return pinpath_curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

static inline CURLcode pinpath_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return pinpath_curl_easy_getinfo(handle, info, value);
}
static inline CURLcode pinpath_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return pinpath_curl_easy_getinfo(handle, info, value);
}
static inline CURLcode pinpath_curl_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return pinpath_curl_easy_getinfo(handle, info, value);
}
// CURLINFO_ACTIVESOCKET: the connected socket of a CURLOPT_CONNECT_ONLY transfer (variadic: a curl_socket_t*).
static inline CURLcode pinpath_curl_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value) {
    return pinpath_curl_easy_getinfo(handle, info, value);
}
// CURLINFO_TLS_SSL_PTR: the backend's session (an OpenSSL SSL* in `internals`).
static inline CURLcode pinpath_curl_getinfo_tls_session(CURL *handle, struct curl_tlssessioninfo **value) {
    return pinpath_curl_easy_getinfo(handle, CURLINFO_TLS_SSL_PTR, value);
}

static inline CURLMcode pinpath_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return pinpath_curl_multi_setopt(multi, option, value);
}

static inline CURLSHcode pinpath_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return pinpath_curl_share_setopt(share, option, value);
}

// The address libcurl is about to connect to, as a pointer: curl_sockaddr declares a 16-byte sockaddr that
// may really hold a sockaddr_in6.
static inline const struct sockaddr *pinpath_curl_sockaddr(const struct curl_sockaddr *address) {
    return &address->addr;
}

#endif
