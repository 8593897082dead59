// Linked into the binaries of `scripts/sanitize thread` only, never into a normal build: lets ThreadSanitizer
// see Synchronization.Mutex hand its lock from one thread to another on Linux.
//
// Mutex's fast paths are atomics inlined into our code, which ThreadSanitizer instruments. Its slow paths
// (`_lockSlow`: a spin on the lock word, then the kernel's priority-inheritance futex; `_unlockSlow`; and
// `_tryLockSlow`) run inside libswiftSynchronization.so, which it does not: a lock taken there acquires nothing
// it can see, and every access the lock protects looks like a race (proven with four threads appending to a
// Mutex<[Int]>). These three wrap the library's functions under the same symbols, so the calls our inlined
// code makes land here, and tell ThreadSanitizer that an unlock releases, and a lock acquires, the lock word
// (the address Mutex's atomics use). Swift passes `self`, the handle, in the swiftself register.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

void __tsan_acquire(void *address);
void __tsan_release(void *address);

#define SWIFT_CALL __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))  // clang's name for the swiftself register
#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFT_CALL void (*LockSlow)(uint32_t threadID, void *SWIFT_SELF handle);
typedef SWIFT_CALL bool (*TryLockSlow)(void *SWIFT_SELF handle);
typedef SWIFT_CALL void (*UnlockSlow)(void *SWIFT_SELF handle);

SWIFT_CALL void pinpath_tsan_lock_slow(uint32_t threadID, void *SWIFT_SELF handle) __asm__(LOCK_SLOW);
SWIFT_CALL bool pinpath_tsan_try_lock_slow(void *SWIFT_SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFT_CALL void pinpath_tsan_unlock_slow(void *SWIFT_SELF handle) __asm__(UNLOCK_SLOW);

SWIFT_CALL void pinpath_tsan_lock_slow(uint32_t threadID, void *SWIFT_SELF handle) {
    static LockSlow library;
    if (!library) library = (LockSlow)dlsym(RTLD_NEXT, LOCK_SLOW);
    library(threadID, handle);
    __tsan_acquire(handle);
}

SWIFT_CALL bool pinpath_tsan_try_lock_slow(void *SWIFT_SELF handle) {
    static TryLockSlow library;
    if (!library) library = (TryLockSlow)dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
    bool locked = library(handle);
    if (locked) __tsan_acquire(handle);
    return locked;
}

SWIFT_CALL void pinpath_tsan_unlock_slow(void *SWIFT_SELF handle) {
    static UnlockSlow library;
    if (!library) library = (UnlockSlow)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    __tsan_release(handle);
    library(handle);
}
