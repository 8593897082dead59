// libcurl is opened when the request core first needs it, not linked: the commands that make no request
// (watch, status, pins, verify, check-config, --version) then start without loading libcurl and the dozen
// libraries it needs, whose symbol relocations were most of pinpath's start-up (docs/performance.md).
// Swift calls the curl_* functions defined here as it would libcurl's own; each forwards to libcurl's.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pinpath_curl.h"

// Debian's libcurl4: the OpenSSL build (the GnuTLS and NSS builds have other names).
#define PINPATH_CURL_LIBRARY "libcurl.so.4"

// Every non-variadic libcurl function pinpath calls: return type, name, parameters, arguments. `V` for those
// returning void.
#define PINPATH_CURL_FUNCTIONS(X, V)                                                                             \
    X(CURLcode, curl_global_init, (long flags), (flags))                                                         \
    X(curl_version_info_data *, curl_version_info, (CURLversion age), (age))                                     \
    X(CURL *, curl_easy_init, (void), ())                                                                        \
    V(curl_easy_reset, (CURL * handle), (handle))                                                                \
    V(curl_easy_cleanup, (CURL * handle), (handle))                                                              \
    X(const char *, curl_easy_strerror, (CURLcode code), (code))                                                 \
    X(CURLcode, curl_easy_pause, (CURL * handle, int bitmask), (handle, bitmask))                                \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist * list, const char *text), (list, text))        \
    V(curl_slist_free_all, (struct curl_slist * list), (list))                                                   \
    X(CURLM *, curl_multi_init, (void), ())                                                                      \
    X(CURLMcode, curl_multi_add_handle, (CURLM * multi, CURL *handle), (multi, handle))                          \
    X(CURLMcode, curl_multi_remove_handle, (CURLM * multi, CURL *handle), (multi, handle))                       \
    X(CURLMcode, curl_multi_perform, (CURLM * multi, int *running), (multi, running))                            \
    X(CURLMcode, curl_multi_poll,                                                                                \
      (CURLM * multi, struct curl_waitfd extra[], unsigned int count, int timeout, int *ready),                 \
      (multi, extra, count, timeout, ready))                                                                     \
    X(CURLMcode, curl_multi_wakeup, (CURLM * multi), (multi))                                                    \
    X(CURLMsg *, curl_multi_info_read, (CURLM * multi, int *queued), (multi, queued))                            \
    X(CURLMcode, curl_multi_cleanup, (CURLM * multi), (multi))                                                   \
    X(const char *, curl_multi_strerror, (CURLMcode code), (code))                                               \
    X(CURLSH *, curl_share_init, (void), ())                                                                     \
    X(CURLSHcode, curl_share_cleanup, (CURLSH * share), (share))                                                 \
    X(const char *, curl_share_strerror, (CURLSHcode code), (code))

#define POINTER(type, name, parameters, arguments) static type(*name##_in_libcurl) parameters;
#define VOID_POINTER(name, parameters, arguments) static void(*name##_in_libcurl) parameters;
PINPATH_CURL_FUNCTIONS(POINTER, VOID_POINTER)

CURLcode (*pinpath_curl_easy_setopt)(CURL *, CURLoption, ...);
CURLcode (*pinpath_curl_easy_getinfo)(CURL *, CURLINFO, ...);
CURLMcode (*pinpath_curl_multi_setopt)(CURLM *, CURLMoption, ...);
CURLSHcode (*pinpath_curl_share_setopt)(CURLSH *, CURLSHoption, ...);

static char failure[512];
static const char *load_failure;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

// Opens libcurl and finds every function; NULL, or why it cannot be used.
static const char *open_libcurl(void) {
    void *library = dlopen(PINPATH_CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "%s", dlerror());
        return failure;
    }
    const char *missing = NULL;
#define FIND(pointer, name)                                                                                        \
    if (missing == NULL && ((pointer) = dlsym(library, name)) == NULL) missing = name;
#define FIND_FUNCTION(type, name, parameters, arguments) FIND(*(void **)&name##_in_libcurl, #name)
#define FIND_VOID_FUNCTION(name, parameters, arguments) FIND(*(void **)&name##_in_libcurl, #name)
    PINPATH_CURL_FUNCTIONS(FIND_FUNCTION, FIND_VOID_FUNCTION)
    FIND(*(void **)&pinpath_curl_easy_setopt, "curl_easy_setopt")
    FIND(*(void **)&pinpath_curl_easy_getinfo, "curl_easy_getinfo")
    FIND(*(void **)&pinpath_curl_multi_setopt, "curl_multi_setopt")
    FIND(*(void **)&pinpath_curl_share_setopt, "curl_share_setopt")
    if (missing != NULL) {
        snprintf(failure, sizeof failure, "%s has no %s", PINPATH_CURL_LIBRARY, missing);
        return failure;
    }
    return NULL;
}

static void load(void) { load_failure = open_libcurl(); }

const char *pinpath_curl_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

// The request core calls pinpath_curl_load() first and reports its failure; reaching a function without
// libcurl is a bug, not an input, so it stops the process with the reason rather than jumping to NULL.
static void require_libcurl(void) {
    const char *reason = pinpath_curl_load();
    if (reason != NULL) {
        fprintf(stderr, "pinpath: error: libcurl is needed but could not be loaded: %s\n", reason);
        abort();
    }
}

#define FORWARD(type, name, parameters, arguments)                                                                 \
    type name parameters {                                                                                         \
        require_libcurl();                                                                                         \
        return name##_in_libcurl arguments;                                                                        \
    }
#define FORWARD_VOID(name, parameters, arguments)                                                                  \
    void name parameters {                                                                                         \
        require_libcurl();                                                                                         \
        name##_in_libcurl arguments;                                                                               \
    }
PINPATH_CURL_FUNCTIONS(FORWARD, FORWARD_VOID)
