/* The floor of a streamed body: one GET with libcurl's easy interface used directly, its body counted and
 * discarded by a write callback, no gates, no Swift. Built and run by benchmarks/large-transfer.sh next to
 * `pinpath-bench stream`, with the same settings as the request core (HTTP/2 over TLS when the server offers it,
 * every encoding libcurl decodes, no TLS session cache, the CA file alone):
 *   curl-write-loop URL ca=FILE [buffer=BYTES]
 * buffer= sets CURLOPT_BUFFERSIZE (libcurl's default is 16 KiB).
 * Prints one line in pinpath-bench's format: bytes, wall time, MB/s (10^6 bytes), CPU seconds (user + sys, all
 * threads) and CPU seconds per GiB, and the HTTP version libcurl used. Timed from just before the request to
 * the end of the body: the process's start-up and libcurl's global initialisation are outside. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static size_t count_and_discard(char *data, size_t size, size_t count, void *context) {
    (void)data;
    *(curl_off_t *)context += (curl_off_t)(size * count);
    return size * count;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static const char *version_name(long version) {
    switch (version) {
    case CURL_HTTP_VERSION_1_0: return "HTTP/1.0";
    case CURL_HTTP_VERSION_1_1: return "HTTP/1.1";
    case CURL_HTTP_VERSION_2_0: return "HTTP/2";
    case CURL_HTTP_VERSION_3: return "HTTP/3";
    default: return "unknown";
    }
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: curl-write-loop URL ca=FILE [buffer=BYTES]\n"); return 64; }
    const char *url = argv[1], *ca = NULL;
    long buffer = 0;
    for (int i = 2; i < argc; i++) {
        if (!strncmp(argv[i], "ca=", 3)) ca = argv[i] + 3;
        if (!strncmp(argv[i], "buffer=", 7)) buffer = atol(argv[i] + 7);
    }
    curl_global_init(CURL_GLOBAL_ALL);
    CURL *h = curl_easy_init();
    curl_off_t received = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_and_discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &received);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    if (ca) {
        curl_easy_setopt(h, CURLOPT_CAINFO, ca);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    }
    if (buffer > 0) curl_easy_setopt(h, CURLOPT_BUFFERSIZE, buffer);

    double cpu0 = cpu(), t0 = now();
    CURLcode code = curl_easy_perform(h);
    double wall = now() - t0, used = cpu() - cpu0;
    if (code != CURLE_OK) { fprintf(stderr, "curl-write-loop: %s\n", curl_easy_strerror(code)); return 1; }
    long version = 0;
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
    printf("bytes=%lld wall_s=%.3f mbps=%.1f cpu_s=%.3f cpu_s_per_gib=%.3f version=%s\n", (long long)received, wall,
           received / wall / 1e6, used, used / (received / 1073741824.0), version_name(version));
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return 0;
}
