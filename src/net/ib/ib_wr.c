/* Work requests, built in one place so their fields can be checked
 * without a device. */
#include "config.h"
#include "ib.h"

#include <arpa/inet.h>
#include <string.h>

void weft_ib_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                      uint32_t rkey, uint32_t len, uint64_t wr_id, int signaled)
{
    memset(wr, 0, sizeof(*wr));
    sge->addr = laddr;
    sge->length = len;
    sge->lkey = lkey;
    wr->wr_id = wr_id;
    wr->sg_list = sge;
    wr->num_sge = len ? 1 : 0;
    wr->opcode = IBV_WR_RDMA_WRITE;
    wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
}

void weft_ib_wr_store(struct ibv_send_wr *wr, struct ibv_sge *sge, const uint64_t *value, uint64_t raddr,
                      uint32_t rkey, uint64_t wr_id)
{
    /* inline: the HCA copies the value when posted, no registration */
    weft_ib_wr_write(wr, sge, (uint64_t)(uintptr_t)value, 0, raddr, rkey, 8, wr_id, 1);
    wr->send_flags |= IBV_SEND_INLINE;
}

void weft_ib_wr_fetch_add(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t laddr, uint32_t lkey,
                          uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t wr_id)
{
    memset(wr, 0, sizeof(*wr));
    sge->addr = laddr;
    sge->length = 8;
    sge->lkey = lkey;
    wr->wr_id = wr_id;
    wr->sg_list = sge;
    wr->num_sge = 1;
    wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    /* fence: the add waits for the requests before it (it names a signal
     * that must not overtake the data) */
    wr->send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
    wr->wr.atomic.remote_addr = raddr;
    wr->wr.atomic.compare_add = add;
    wr->wr.atomic.rkey = rkey;
}

void weft_ib_wr_imm_add(struct ibv_send_wr *wr, struct ibv_sge *sge, const uint64_t *target, uint64_t slot_addr,
                        uint32_t rkey, uint32_t add, uint64_t wr_id)
{
    weft_ib_wr_write(wr, sge, (uint64_t)(uintptr_t)target, 0, slot_addr, rkey, 8, wr_id, 1);
    wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr->send_flags |= IBV_SEND_INLINE;
    wr->imm_data = htonl(add); /* network order on the wire, as verbs defines it */
}
