/* Comma- (or blank-) separated lists as users write them, split in place, with an empty item
 * an error naming its position rather than a silent skip. */
#include <stdbool.h>
#include <string.h>

#include "otc/text.h"

static bool blank(char c) {
    return c == ' ' || c == '\t';
}

otc_status otc_list_split(char *buf, bool blanks_separate, char **items, int max, int *n) {
    *n = 0;
    /* need: no item since the start or since the last comma; comma: the last separator read
     * was a comma, so the list may not end here */
    bool need = true, comma = false;
    for (char *p = buf;;) {
        while (blank(*p)) p++;
        if (*p == '\0') {
            if (comma) return otc_fail(OTC_ERR_ARG, "item %d is empty", *n + 1);
            return OTC_OK;
        }
        if (*p == ',') {
            if (need) return otc_fail(OTC_ERR_ARG, "item %d is empty", *n + 1);
            need = comma = true;
            *p++ = '\0';
            continue;
        }
        if (*n == max) return otc_fail(OTC_ERR_ARG, "more than %d items", max);
        char *start = p;
        while (*p && *p != ',' && !(blanks_separate && blank(*p))) p++;
        char *end = p;
        while (end > start && blank(end[-1])) end--;
        items[(*n)++] = start;
        need = comma = false;
        if (*p == ',') {
            need = comma = true;
            p++;
        } else if (*p) {
            p++; /* a blank separating items */
        }
        *end = '\0';
    }
}
