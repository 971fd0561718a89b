#include "config.h"
#include "wire.h"

#include <stdio.h>
#include <string.h>

void weft_wire_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t weft_wire_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

void weft_wire_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t weft_wire_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void weft_wire_register_encode(const weft_register_t *reg, uint8_t out[WEFT_REGISTER_BYTES])
{
    memset(out, 0, WEFT_REGISTER_BYTES);
    weft_wire_put_u32(out, (uint32_t)reg->rank);
    weft_wire_put_u32(out + 4, (uint32_t)reg->nranks);
    weft_addr_to_wire(&reg->addr, out + 8);
    memcpy(out + 32, reg->hostid, WEFT_HOSTID_BYTES);
    weft_wire_put_u32(out + 48, reg->pid);
}

weft_status_t weft_wire_register_decode(const uint8_t *p, size_t len, weft_register_t *reg)
{
    weft_register_t r;
    uint32_t rank, nranks;
    if (len != WEFT_REGISTER_BYTES)
        return WEFT_ERR_PROTOCOL;
    rank = weft_wire_get_u32(p);
    nranks = weft_wire_get_u32(p + 4);
    /* Unsigned on the wire; anything beyond INT_MAX is out of range. */
    r.rank = rank > 0x7fffffffu ? -1 : (int)rank;
    r.nranks = nranks > 0x7fffffffu ? -1 : (int)nranks;
    if (weft_addr_from_wire(p + 8, &r.addr) != WEFT_OK)
        return WEFT_ERR_PROTOCOL;
    memcpy(r.hostid, p + 32, WEFT_HOSTID_BYTES);
    r.pid = weft_wire_get_u32(p + 48);
    *reg = r;
    return WEFT_OK;
}

void weft_wire_table_entry(const weft_register_t *reg, uint8_t out[WEFT_TABLE_ENTRY_BYTES])
{
    memset(out, 0, WEFT_TABLE_ENTRY_BYTES);
    weft_addr_to_wire(&reg->addr, out);
    memcpy(out + 24, reg->hostid, WEFT_HOSTID_BYTES);
    weft_wire_put_u32(out + 40, reg->pid);
}

weft_status_t weft_wire_table_entry_decode(const uint8_t *p, weft_register_t *reg)
{
    weft_register_t r;
    memset(&r, 0, sizeof(r));
    if (weft_addr_from_wire(p, &r.addr) != WEFT_OK)
        return WEFT_ERR_PROTOCOL;
    memcpy(r.hostid, p + 24, WEFT_HOSTID_BYTES);
    r.pid = weft_wire_get_u32(p + 40);
    *reg = r;
    return WEFT_OK;
}
