/* The floor of the request core: the same requests with libcurl used directly, no gates, no Swift.
 * Built and run by benchmarks/request-core.sh and benchmarks/agent-scale.sh:
 *   curl-floor URL COUNT CONCURRENCY [fresh] [ca=FILE] [cacache] [rate=PER_SECOND] [header=LINE ...]
 * cacache clears CURLOPT_CAPATH so that libcurl's CA cache (CURLOPT_CA_CACHE_TIMEOUT, 7.87+, kept in the multi
 * handle) applies: Debian builds libcurl with a default CA path, and with a CA path set libcurl 7.88 loads the
 * CA file into a new X509_STORE for every connection.
 * rate= paces the starts evenly (at most CONCURRENCY in flight), as an agent's schedule does; without it
 * requests start as soon as a slot is free.
 * header= adds a request header line (`Name: value`), so that the floor can send the same request bytes as
 * pinpath, whose session adds User-Agent and Accept-Language (`pinpath-bench headers` prints them).
 * Prints one line in pinpath-bench's format. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lib/clocks.h"

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

static int ca_cache;
static struct curl_slist *headers;

static CURL *make(const char *url, int fresh, const char *ca) {
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (ca) curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    if (ca_cache) curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (fresh) {
        curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    }
    return h;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: curl-floor URL COUNT CONCURRENCY [fresh] [ca=FILE] [cacache] [rate=PER_SECOND] [header=LINE ...]\n"); return 64; }
    const char *url = argv[1];
    int count = atoi(argv[2]), concurrency = atoi(argv[3]), fresh = 0;
    const char *ca = NULL;
    double rate = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "fresh")) fresh = 1;
        if (!strncmp(argv[i], "ca=", 3)) ca = argv[i] + 3;
        if (!strncmp(argv[i], "rate=", 5)) rate = atof(argv[i] + 5);
        if (!strcmp(argv[i], "cacache")) ca_cache = 1;
        if (!strncmp(argv[i], "header=", 7)) headers = curl_slist_append(headers, argv[i] + 7);
    }
    curl_global_init(CURL_GLOBAL_ALL);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    /* warm-up, as pinpath-bench does */
    CURL *warm = make(url, fresh, ca);
    curl_easy_perform(warm);
    curl_easy_cleanup(warm);

    double cpu0 = cpu(), t0 = now();
    int started = 0, done = 0, running = 0;
    while (done < count) {
        /* start what is due: everything a free slot allows, or, paced, what the schedule has reached */
        while (started < count && started - done < concurrency && (rate <= 0 || now() >= t0 + started / rate)) {
            curl_multi_add_handle(multi, make(url, fresh, ca));
            started++;
        }
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            long status = 0;
            curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status != 200) {
                fprintf(stderr, "curl-floor: request failed: %s, status %ld\n", curl_easy_strerror(message->data.result), status);
                return 1;
            }
            CURL *finished = message->easy_handle;
            curl_multi_remove_handle(multi, finished);
            curl_easy_cleanup(finished);  /* a new easy handle per request, as pinpath does */
            done++;
        }
        if (done >= count) break;
        int wait_ms = 1000;
        if (started < count && started - done < concurrency) {
            double until_next = rate > 0 ? t0 + started / rate - now() : 0;
            wait_ms = until_next <= 0 ? 0 : (int)(until_next * 1000) + 1;
            if (wait_ms > 1000) wait_ms = 1000;
        }
        if (wait_ms > 0) curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
    }
    double wall = now() - t0, used = cpu() - cpu0;
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    double rss = 0;
    while (status && fgets(line, sizeof line, status))
        if (!strncmp(line, "VmRSS:", 6)) rss = atof(line + 6) / 1024;
    if (status) fclose(status);
    printf("requests=%d wall_s=%.2f rps=%.2f cpu_us_per_request=%.2f rss_mib=%.2f\n", count, wall, count / wall, used / count * 1e6, rss);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    return 0;
}
