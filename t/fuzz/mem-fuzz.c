/*
 * Fuzz target: importing a peer's memory handle (weft_mem_deserialize,
 * src/core/mem.c), the 256 bytes a peer sends for every buffer it shares.
 *
 * Two ranks of one job live in this process (rank 1 on a thread during
 * set-up); rank 1 has registered 8 KiB of a 64 KiB allocation for IPC,
 * and its handle is the template. An input is u8 flags, then up to 256
 * bytes laid over the template; the flags put back what the fuzzer cannot
 * find alone: 1 the magic, version and checksum; 2 the job tag; 4 the host
 * id and backend name; 8 the export id and IPC blob; 16 the allocation's
 * size. Rank 0 imports the result (with the real fd service of rank 1).
 * Invariants: a refused handle is refused as invalid (or withdrawn), and
 * leaves the output and the count of registrations alone; an accepted
 * one names a peer, and every byte of it is mapped (the target writes
 * them all).
 */
#include "config.h"
#include "comm.h"
#include "fuzz.h"
#include "weft.h"

#include <pthread.h>

static weft_unique_id_t id;
static weft_comm_t *comm0, *comm1;
static weft_mem_handle_t template_h;
static void *rank1_buf;     /* kept for the life of the process */
static weft_mem_t *rank1_mem;

static void *rank1_main(void *arg)
{
    (void)arg;
    if (weft_comm_init(&id, 2, 1, NULL, &comm1) != WEFT_OK || weft_mem_alloc(comm1, 65536, &rank1_buf) != WEFT_OK ||
        weft_mem_register(comm1, (char *)rank1_buf + 4096, 8192, WEFT_TRANSPORT_IPC, &rank1_mem) != WEFT_OK ||
        weft_mem_serialize(rank1_mem, &template_h) != WEFT_OK) {
        fprintf(stderr, "rank 1 set-up: %s\n", weft_get_last_error());
        abort();
    }
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    pthread_t t;
    (void)argc;
    (void)argv;
    fuzz_env();
    setenv("WEFT_ROOT", "", 1);
    if (weft_get_unique_id(&id) != WEFT_OK || pthread_create(&t, NULL, rank1_main, NULL) != 0)
        abort();
    if (weft_comm_init(&id, 2, 0, NULL, &comm0) != WEFT_OK) {
        fprintf(stderr, "rank 0 set-up: %s\n", weft_get_last_error());
        abort();
    }
    pthread_join(t, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    weft_mem_handle_t h = template_h;
    uint8_t *p = h.internal, flags;
    weft_mem_t *m = (weft_mem_t *)&h; /* a sentinel: must stay unless accepted */
    weft_status_t status;
    int nmems;

    if (size < 1)
        return 0;
    if (!comm0)
        LLVMFuzzerInitialize(NULL, NULL);
    flags = data[0];
    memcpy(p, data + 1, WEFT_MIN(size - 1, sizeof(h.internal)));
    if (flags & 2)
        memcpy(p + 32, template_h.internal + 32, 16);
    if (flags & 4) {
        memcpy(p + 16, template_h.internal + 16, 16);
        memcpy(p + 92, template_h.internal + 92, 8);
    }
    if (flags & 8) {
        memcpy(p + 72, template_h.internal + 72, 8);
        memcpy(p + 88, template_h.internal + 88, 4);
        memcpy(p + 100, template_h.internal + 100, 96);
    }
    if (flags & 16)
        memcpy(p + 64, template_h.internal + 64, 8);
    if (flags & 1) {
        uint8_t digest[32];
        memcpy(p, template_h.internal, 8);
        weft_sha256(p, 248, digest);
        memcpy(p + 248, digest, 8);
    }
    nmems = comm0->nmems;
    status = weft_mem_deserialize(comm0, &h, &m);
    if (status != WEFT_OK) {
        /* a bad handle is the sender's fault: never our memory or system */
        FUZZ_CHECK(status == WEFT_ERR_INVALID_ARGUMENT || status == WEFT_ERR_NOT_FOUND,
                   "a handle was refused with %s", weft_status_string(status));
        FUZZ_CHECK(m == (weft_mem_t *)&h, "a refused handle wrote the output");
        FUZZ_CHECK(comm0->nmems == nmems, "a refused handle changed the registrations (%d -> %d)", nmems,
                   comm0->nmems);
        return 0;
    }
    {
        int owner = -1;
        size_t bytes = 0;
        void *ptr = NULL;
        FUZZ_CHECK(weft_mem_rank(m, &owner) == WEFT_OK && owner == 1, "an import owned by rank %d", owner);
        FUZZ_CHECK(weft_mem_size(m, &bytes) == WEFT_OK, "size");
        if (weft_mem_ptr(m, &ptr) == WEFT_OK && ptr && bytes)
            memset(ptr, 0x5a, bytes); /* every byte of it is mapped */
        FUZZ_CHECK(weft_mem_deregister(m) == WEFT_OK, "deregistering an import");
        FUZZ_CHECK(comm0->nmems == nmems, "an import left a registration behind");
    }
    return 0;
}
