// pcre2.h declares nothing until the code unit width is chosen: 8 bits, so patterns and subjects are UTF-8.
// Its generic names (pcre2_compile) are macros Swift cannot import; Swift calls the _8 functions they expand to.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
