// libFuzzer's driver entry point (compiler-rt's FuzzerInterface.h declares it but is not installed).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
