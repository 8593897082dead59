// SwiftPM builds a C target from its sources: this one is all static inline functions in the header.
#include "pinpath_openssl.h"
