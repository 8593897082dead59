/* The floor of a full-handshake request: OpenSSL used directly, no libcurl, no Swift. Built and run by
 * benchmarks/request-core.sh:
 *   openssl-floor https://HOST:PORT/ COUNT ca=FILE [context-per-connection] [handshake-only] [rate=PER_SECOND]
 * COUNT connections one after another, each: TCP connect, a full TLS handshake (no session resumption),
 * the chain verified against the CA file and the host checked as pinpath's policy checks it
 * (X509_VERIFY_PARAM_set1_host or set1_ip_asc, never the subject CN), one `GET / HTTP/1.1` with
 * `Connection: close`, the response read to its end, close.
 * One SSL_CTX and one trust store serve every connection (the CA file is read once); with
 * context-per-connection each connection gets a new SSL_CTX sharing that one store, as libcurl 7.88 makes
 * one per connection.
 * handshake-only (benchmarks/agent-scale.sh, the floor of a tls:// probe): no request; after the verified
 * handshake the connection sends its close_notify and closes. rate= paces the connections' starts evenly, as an
 * agent's schedule does (one at a time; a connection that ends late delays the next).
 * Prints one line in pinpath-bench's format. */
#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/clocks.h"

static void fail(const char *what) {
    fprintf(stderr, "openssl-floor: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static SSL_CTX *make_context(X509_STORE *store) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) fail("SSL_CTX_new failed");
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
    /* Every connection is a full handshake, as pinpath's (its session cache is off so every chain is checked). */
    SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(context, SSL_OP_NO_TICKET);
    X509_STORE_up_ref(store);
    SSL_CTX_set_cert_store(context, store);
    return context;
}

static int handshake_only;

/* One request on a new connection; returns the HTTP status (200 for a verified handshake with handshake-only). */
static int request(SSL_CTX *context, const struct addrinfo *address, const char *host, const char *port) {
    int fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0 || connect(fd, address->ai_addr, address->ai_addrlen) != 0) fail("cannot connect");
    SSL *ssl = SSL_new(context);
    if (!ssl) fail("SSL_new failed");
    unsigned char ip[16];
    int numeric = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (numeric ? !X509_VERIFY_PARAM_set1_ip_asc(param, host) : !X509_VERIFY_PARAM_set1_host(param, host, 0))
        fail("cannot set the host to check");
    if (!numeric) SSL_set_tlsext_host_name(ssl, host);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) fail("handshake failed");
    if (SSL_get_verify_result(ssl) != X509_V_OK) fail("verification failed");
    if (handshake_only) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
        close(fd);
        return 200;
    }
    char text[512];
    int length = snprintf(text, sizeof text, "GET / HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: openssl-floor\r\nAccept: */*\r\nConnection: close\r\n\r\n", host, port);
    if (SSL_write(ssl, text, length) != length) fail("cannot send the request");
    /* The status from the first bytes; the rest is read to the server's close and dropped. */
    char response[16384];
    int n = SSL_read(ssl, response, sizeof response - 1), status = 0;
    if (n > 0) {
        response[n] = 0;
        sscanf(response, "HTTP/%*s %d", &status);
    }
    while (n > 0) n = SSL_read(ssl, response, sizeof response);
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    return status;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: openssl-floor https://HOST:PORT/ COUNT ca=FILE [context-per-connection]\n"); return 64; }
    char host[256], port[16];
    if (sscanf(argv[1], "https://%255[^:/]:%15[0-9]", host, port) != 2) { fprintf(stderr, "openssl-floor: %s: use https://HOST:PORT/\n", argv[1]); return 64; }
    int count = atoi(argv[2]), per_connection = 0;
    const char *ca = NULL;
    double rate = 0;
    for (int i = 3; i < argc; i++) {
        if (!strncmp(argv[i], "ca=", 3)) ca = argv[i] + 3;
        if (!strcmp(argv[i], "context-per-connection")) per_connection = 1;
        if (!strcmp(argv[i], "handshake-only")) handshake_only = 1;
        if (!strncmp(argv[i], "rate=", 5)) rate = atof(argv[i] + 5);
    }
    if (!ca || count <= 0) { fprintf(stderr, "openssl-floor: needs ca=FILE and a positive COUNT\n"); return 64; }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *address;
    if (getaddrinfo(host, port, &hints, &address) != 0) fail("cannot resolve the host");
    X509_STORE *store = X509_STORE_new();
    if (!store || X509_STORE_load_file(store, ca) != 1) fail("cannot load the CA file");
    SSL_CTX *shared = per_connection ? NULL : make_context(store);

    /* warm-up, as pinpath-bench does */
    SSL_CTX *warm = shared ? shared : make_context(store);
    if (request(warm, address, host, port) != 200) fail("the warm-up request did not get status 200");
    if (!shared) SSL_CTX_free(warm);

    double cpu0 = cpu(), t0 = now();
    for (int i = 0; i < count; i++) {
        double wait = rate > 0 ? t0 + i / rate - now() : 0;
        if (wait > 0) nanosleep(&(struct timespec){.tv_sec = (time_t)wait, .tv_nsec = (long)((wait - (time_t)wait) * 1e9)}, NULL);
        SSL_CTX *context = shared ? shared : make_context(store);
        int status = request(context, address, host, port);
        if (!shared) SSL_CTX_free(context);
        if (status != 200) { fprintf(stderr, "openssl-floor: status %d\n", status); return 1; }
    }
    double wall = now() - t0, used = cpu() - cpu0;
    FILE *proc = fopen("/proc/self/status", "r");
    char line[256];
    double rss = 0;
    while (proc && fgets(line, sizeof line, proc))
        if (!strncmp(line, "VmRSS:", 6)) rss = atof(line + 6) / 1024;
    if (proc) fclose(proc);
    printf("requests=%d wall_s=%.2f rps=%.2f cpu_us_per_request=%.2f rss_mib=%.2f\n", count, wall, count / wall, used / count * 1e6, rss);
    return 0;
}
