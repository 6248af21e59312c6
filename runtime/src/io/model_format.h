/* Private to the .otm reader and writer: the container layout, the limits a file must respect,
 * which node fields each op stores, and the byte helpers both sides share. */
#ifndef OTC_MODEL_FORMAT_H
#define OTC_MODEL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "otc/limits.h"
#include "otc/ops.h"

/* Layout, all integers little-endian:
 *   [0,8)   magic "OTCMODEL"
 *   [8,12)  u32 version
 *   [12,16) u32 reserved (0)
 *   [16,24) u64 JSON length J
 *   J bytes of JSON text (no NUL)
 *   u64 parameter float count N
 *   N little-endian f32
 *   u32 CRC-32 (IEEE) of every byte before it */
#define OTM_MAGIC      "OTCMODEL"
#define OTM_MAGIC_LEN  8
#define OTM_VERSION    1u
#define OTM_PREFIX_LEN 24 /* magic, version, reserved, JSON length */

/* The limits a file must respect are otc/limits.h's. */

/* Which optional node fields an op stores; the writer writes exactly these and the reader
 * requires exactly these, so the two can never disagree about a field. */
enum {
    OTM_F_ALPHA = 1 << 0,
    OTM_F_SCALE = 1 << 1,
    OTM_F_ACT = 1 << 2,
    OTM_F_COLS = 1 << 3,
    OTM_F_AXIS = 1 << 4,
    OTM_F_START = 1 << 5,
    OTM_F_LEN = 1 << 6,
    /* Conv2d and pooling: "kernel", "stride", "padding", "dilation" ([h, w] each) and
     * "groups" (otc_window) */
    OTM_F_WINDOW = 1 << 7,
};

static inline unsigned otm_op_fields(otc_op op) {
    switch (op) {
    case OTC_OP_SCALE:
        return OTM_F_SCALE;
    case OTC_OP_NEURON:
        return OTM_F_ALPHA | OTM_F_SCALE | OTM_F_ACT | OTM_F_COLS;
    case OTC_OP_CONCAT:
        return OTM_F_AXIS;
    case OTC_OP_CONV2D:
    case OTC_OP_MAXPOOL2D:
    case OTC_OP_AVGPOOL2D:
        return OTM_F_WINDOW;
    /* Select's len is always 1, but it is stored so a loaded node equals the built one. */
    case OTC_OP_SLICE:
    case OTC_OP_SELECT:
        return OTM_F_AXIS | OTM_F_START | OTM_F_LEN;
    default:
        break;
    }
    /* Every activation op carries its parameter (LeakyReLU slope, ELU alpha, unused by
     * others but kept, so a round trip changes nothing). */
    const otc_op_info *info = otc_op_get(op);
    return info && info->act >= 0 ? OTM_F_ALPHA : 0;
}

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32): pass crc 0 to start, the result to go on. */
uint32_t otc_model_crc32(uint32_t crc, const unsigned char *p, size_t n);

/* Byte order is spelled out with shifts, so the file is little-endian on any host. */
static inline void otm_put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void otm_put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t otm_get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t otm_get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
