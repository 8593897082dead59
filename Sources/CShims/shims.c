#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "pinpath_shims.h"

int pinpath_setns_net(int fd) { return setns(fd, CLONE_NEWNET); }

int pinpath_eventfd_nonblocking(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int pinpath_so_rcvbufforce(void) { return SO_RCVBUFFORCE; }

void pinpath_set_thread_name(const char *name) { pthread_setname_np(pthread_self(), name); }
