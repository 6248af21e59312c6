/* An .otm container writer written from the format's description alone, so the tests that
 * build damaged or hostile model files do not trust the code under test to define it. */
#ifndef OTC_TEST_OTM_REF_H
#define OTC_TEST_OTM_REF_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (IEEE, reflected), bit by bit: the reference the .otm trailer is checked against. */
uint32_t otm_ref_crc32(const unsigned char *p, size_t n);

/* Little-endian integers of 1..8 bytes. */
void otm_ref_put_le(unsigned char *p, uint64_t v, int bytes);
uint64_t otm_ref_get_le(const unsigned char *p, int bytes);

/* magic, version 1, reserved 0, JSON (jlen bytes), float count, floats, CRC-32. malloc'd;
 * floats may be NULL when n is 0. */
unsigned char *otm_ref_pack(const char *json, size_t jlen, const float *floats, size_t n,
                            size_t *len);

/* Rewrites the trailing CRC of a whole file image after a test changed its bytes. */
void otm_ref_refresh_crc(unsigned char *b, size_t len);

#endif
