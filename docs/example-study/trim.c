/* The length of s without its leading and trailing whitespace (what Lua's %s matches). */
#include <ctype.h>
#include <stddef.h>

size_t trimmed_length(const char *s, size_t n) {
    size_t start = 0, end = n;
    while (start < end && isspace((unsigned char)s[start])) start++;
    while (end > start && isspace((unsigned char)s[end - 1])) end--;
    return end - start;
}
