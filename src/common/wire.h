/* Encoding of fixed-size payloads, little-endian: integers, and the
 * bootstrap's REGISTER and TABLE entries (the ERROR frame, which needs a
 * connection, is conn.h's). */
#ifndef WEFT_WIRE_H
#define WEFT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "hostid.h"
#include "sock.h"
#include "weft.h"

/* REGISTER: 0 u32 rank | 4 u32 nranks | 8 addr wire[24] | 32 hostid[16] |
 *           48 u32 pid | 52 reserved[12] */
#define WEFT_REGISTER_BYTES 64
/* TABLE: u32 nranks, then per rank: addr wire[24] | hostid[16] | u32 pid |
 *        u32 reserved */
#define WEFT_TABLE_ENTRY_BYTES 48

typedef struct {
    int rank, nranks;
    weft_addr_t addr;
    uint8_t hostid[WEFT_HOSTID_BYTES];
    uint32_t pid;
} weft_register_t;

void weft_wire_put_u32(uint8_t *p, uint32_t v);
uint32_t weft_wire_get_u32(const uint8_t *p);
void weft_wire_put_u64(uint8_t *p, uint64_t v);
uint64_t weft_wire_get_u64(const uint8_t *p);

void weft_wire_register_encode(const weft_register_t *reg, uint8_t out[WEFT_REGISTER_BYTES]);
weft_status_t weft_wire_register_decode(const uint8_t *p, size_t len, weft_register_t *reg);
void weft_wire_table_entry(const weft_register_t *reg, uint8_t out[WEFT_TABLE_ENTRY_BYTES]);
weft_status_t weft_wire_table_entry_decode(const uint8_t *p, weft_register_t *reg);

#endif
