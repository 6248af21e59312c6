/* The tests' independent .otm container writer (see otm_ref.h). */
#include "otm_ref.h"

#include <stdlib.h>
#include <string.h>

uint32_t otm_ref_crc32(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

void otm_ref_put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t otm_ref_get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

unsigned char *otm_ref_pack(const char *json, size_t jlen, const float *floats, size_t n,
                            size_t *len) {
    size_t total = 24 + jlen + 8 + 4 * n + 4;
    unsigned char *b = malloc(total);
    if (!b) return NULL;
    memcpy(b, "OTCMODEL", 8);
    otm_ref_put_le(b + 8, 1, 4);
    otm_ref_put_le(b + 12, 0, 4);
    otm_ref_put_le(b + 16, jlen, 8);
    memcpy(b + 24, json, jlen);
    otm_ref_put_le(b + 24 + jlen, n, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &floats[i], 4);
        otm_ref_put_le(b + 32 + jlen + 4 * i, u, 4);
    }
    otm_ref_refresh_crc(b, total);
    *len = total;
    return b;
}

void otm_ref_refresh_crc(unsigned char *b, size_t len) {
    otm_ref_put_le(b + len - 4, otm_ref_crc32(b, len - 4), 4);
}
