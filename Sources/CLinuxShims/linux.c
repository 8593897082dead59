#define _GNU_SOURCE
#include <crypt.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include "pinpath_linux.h"

int pinpath_setns_net(int fd) { return setns(fd, CLONE_NEWNET); }

int pinpath_eventfd_nonblocking(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int pinpath_so_rcvbufforce(void) { return SO_RCVBUFFORCE; }

void pinpath_set_thread_name(const char *name) { pthread_setname_np(pthread_self(), name); }

int pinpath_malloc_fix_mmap_threshold(size_t bytes) { return mallopt(M_MMAP_THRESHOLD, (int)bytes); }

int pinpath_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int pinpath_receive_datagrams(int fd, unsigned char *buffer, size_t slot_size, unsigned slots, size_t *lengths,
                              int wait_for_one) {
    struct mmsghdr messages[64];
    struct iovec vectors[64];
    if (slots > 64) slots = 64;
    memset(messages, 0, sizeof(messages[0]) * slots);
    for (unsigned i = 0; i < slots; i++) {
        vectors[i].iov_base = buffer + i * slot_size;
        vectors[i].iov_len = slot_size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
    }
    int count = recvmmsg(fd, messages, slots, wait_for_one ? MSG_WAITFORONE : MSG_DONTWAIT, NULL);
    for (int i = 0; i < count; i++)
        lengths[i] = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) ? SIZE_MAX : messages[i].msg_len;
    return count;
}

// Defined by PinpathBuildCommit's generated source (Plugins/GitCommit); weak, so that the C above never
// needs its header and a program without it still links.
extern const char *pinpath_build_commit(void) __attribute__((weak));

const char *pinpath_linked_build_commit(void) {
    return pinpath_build_commit ? pinpath_build_commit() : NULL;
}

// ThreadSanitizer's happens-before annotations, defined only when its runtime is linked (scripts/sanitize
// thread); weak, so that a normal build calls nothing.
extern void __tsan_release(void *address) __attribute__((weak));
extern void __tsan_acquire(void *address) __attribute__((weak));

void pinpath_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}

void pinpath_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

int pinpath_crypt(const char *phrase, const char *setting, char *output, size_t output_size) {
    struct crypt_data *data = calloc(1, sizeof *data);
    if (!data) return -1;
    int result = -1;
    // crypt_rn returns NULL on failure, never a "*0"-style failure token as crypt does.
    const char *hashed = crypt_rn(phrase, setting, data, (int)sizeof *data);
    if (hashed && strlen(hashed) < output_size) {
        memcpy(output, hashed, strlen(hashed) + 1);
        result = 0;
    }
    explicit_bzero(data, sizeof *data);
    free(data);
    return result;
}
