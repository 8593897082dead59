#ifndef PINPATH_LINUX_H
#define PINPATH_LINUX_H

// setns(2) is declared only under _GNU_SOURCE, which Swift's Glibc module does not define.
int pinpath_setns_net(int fd);

// eventfd(2) lives in <sys/eventfd.h>, which Swift's Glibc module does not export.
int pinpath_eventfd_nonblocking(void);

// epoll(7) lives in <sys/epoll.h>, which Swift's Glibc module does not export: included whole, so that its
// functions and its packed struct epoll_event are imported as they are.
#include <sys/epoll.h>

// SO_RCVBUFFORCE comes from <asm/socket.h> as a macro that Swift's Glibc module does not export.
int pinpath_so_rcvbufforce(void);

// sock_diag(7): which user owns the client end of a connection made from this host (the metrics listener's
// share of connections per local user). Its structures and constants are in uapi headers that Swift's Glibc
// module does not export.
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

// pthread_setname_np(3) is declared only under _GNU_SOURCE. Names show in top -H and /proc/PID/task.
void pinpath_set_thread_name(const char *name);

#include <stddef.h>

// mallopt(3) is declared in <malloc.h>, which Swift's Glibc module does not export. Fixes glibc's mmap
// threshold at `bytes` (which also stops glibc from raising it). Returns 1 on success.
int pinpath_malloc_fix_mmap_threshold(size_t bytes);

#include <stdint.h>

// sync_file_range(2) is declared only under _GNU_SOURCE. Starts the writeback of the dirty pages of a range of
// `fd` without waiting for it (SYNC_FILE_RANGE_WRITE): a later fsync(2) then waits for less. Returns 0, or -1 with errno.
int pinpath_start_writeback(int fd, int64_t offset, int64_t length);

// recvmmsg(2) and struct mmsghdr are declared only under _GNU_SOURCE. Receives up to `slots` datagrams
// into consecutive `slot_size` slices of `buffer` in one system call; lengths[i] is SIZE_MAX for a
// datagram that did not fit. Returns the count, or -1 with errno.
int pinpath_receive_datagrams(int fd, unsigned char *buffer, size_t slot_size, unsigned slots, size_t *lengths,
                              int wait_for_one);

// The git commit the program was built from ("abc1234"), or NULL. Swift cannot declare a weak reference:
// the definition, written by the GitCommit plugin into the PinpathBuildCommit target, is looked up weakly so
// that only that small target recompiles when the commit changes (a Swift import of it would recompile
// every module above PinpathSupport after each commit).
const char *pinpath_linked_build_commit(void);

// Tell ThreadSanitizer that what one thread did before `pinpath_tsan_release(a)` happens before what another does
// after `pinpath_tsan_acquire(a)`; nothing outside a ThreadSanitizer build.
void pinpath_tsan_release(void *address);
void pinpath_tsan_acquire(void *address);

// crypt(3) from libcrypt (libxcrypt on Debian 12, which knows bcrypt): its `struct crypt_data` is 32 KiB of
// char arrays, which Swift would import as tuples of 30,720 elements, so the state lives here. Hashes
// `phrase` with `setting` (a whole stored hash works as its own setting) into `output`, NUL-terminated, and wipes
// the state, which held the phrase. Returns 0, or -1 when libcrypt refused (an unknown method, a bad setting)
// or `output` is too small.
int pinpath_crypt(const char *phrase, const char *setting, char *output, size_t output_size);

#endif
