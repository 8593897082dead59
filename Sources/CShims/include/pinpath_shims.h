#ifndef PINPATH_SHIMS_H
#define PINPATH_SHIMS_H

// setns(2) is declared only under _GNU_SOURCE, which Swift's Glibc module does not define.
int pinpath_setns_net(int fd);

// eventfd(2) lives in <sys/eventfd.h>, which Swift's Glibc module does not export.
int pinpath_eventfd_nonblocking(void);

// SO_RCVBUFFORCE comes from <asm/socket.h> as a macro that Swift's Glibc module does not export.
int pinpath_so_rcvbufforce(void);

// pthread_setname_np(3) is declared only under _GNU_SOURCE. Names show in top -H and /proc/PID/task.
void pinpath_set_thread_name(const char *name);

#endif
