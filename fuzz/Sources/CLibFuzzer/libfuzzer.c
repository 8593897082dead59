// Empty: SwiftPM wants a source file in a C target; the declaration is all this target provides.
#include "libfuzzer.h"
