/* Private to the runtime: the one way its readers parse a JSON document from a file, strictly
 * and with bounded memory (cJSON is lenient about both). */
#ifndef OTC_JSON_READ_H
#define OTC_JSON_READ_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "otc/error.h"

/* Values a JSON document may hold: each costs cJSON ~80 bytes parsed, so a file of "0,0,0..."
 * grows ~40 times in memory; the count is taken before parsing. Network and checkpoint files
 * get the small budget (a 1M-connection network has ~5M values), model headers the large. */
#define OTC_JSON_VALUES_SMALL ((size_t)1 << 23) /* ~700 MB parsed at most */
#define OTC_JSON_VALUES_LARGE ((size_t)1 << 25)

/* Parses text[0..len) (need not be NUL-terminated) as exactly one JSON document into *out.
 * Refused with OTC_ERR_FORMAT and a message naming line and byte: invalid JSON, anything but
 * white space after the document, a NUL byte or a \u0000 escape (cJSON would cut the string
 * there, so "abs\u0000xyz" would read as "abs"), more than max_values values. Refused with
 * OTC_ERR_NOMEM: a parsed tree larger than otc_memory_limit(), or an allocation failing while
 * parsing (said as such, not as bad JSON). */
otc_status otc_json_parse(const char *text, size_t len, size_t max_values, cJSON **out);

#endif
