/*
 * Fuzz target: how the NCCL layer reads the caller's ncclConfig_t
 * (read_config in src/nccl/nccl_comm.c, compiled into this target with its
 * static functions). A caller built against an older or newer nccl.h
 * passes a struct of its own size: the library must read no byte past
 * `size`, take the fields that fit, check their ranges, and copy the name
 * string bounded.
 *
 * Input: u16 declared size (little endian; the struct is allocated with
 * exactly that many bytes, at least the size field's 8, so that a read
 * beyond it is a heap overflow under AddressSanitizer) | u8 string flags
 * (bit 0: commName set, bit 1: netName set) | u8 commName length | then the
 * struct's bytes after the size field, then the strings' bytes. The
 * pointer fields that fit are set to the strings (or NULL), never to input
 * bytes: the caller's pointers are the caller's to get right.
 * Invariants: ncclSuccess or ncclInvalidArgument, with a message when
 * refused; accepted only with the right magic and a size that holds
 * `blocking`; the name is the commName cut to the room there is, NUL
 * ended; blocking is 0 only when the caller's field says so.
 */
#include "nccl_comm.c"
#include "fuzz.h"

#include <stddef.h>

#define MAX_SIZE 1024

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_env();
    return 0;
}

/* The field at @p off of @p len bytes lies within @p size. */
static int fits(size_t off, size_t len, size_t size)
{
    return off + len <= size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t declared, alloc, body, name_len, rest;
    char *name = NULL, *net = NULL;
    comm_config_t out;
    ncclConfig_t *cfg;
    ncclResult_t r;
    unsigned flags;
    int magic_ok, blocking_fits, blocking = 1;

    if (size < 4)
        return 0;
    declared = (size_t)(data[0] | data[1] << 8) % (MAX_SIZE + 1);
    flags = data[2];
    name_len = data[3];
    data += 4;
    size -= 4;
    alloc = declared < sizeof(size_t) ? sizeof(size_t) : declared;
    if (!(cfg = malloc(alloc)))
        return 0;
    memset(cfg, 0, alloc);
    cfg->size = declared;
    body = WEFT_MIN(alloc - sizeof(size_t), size);
    memcpy((char *)cfg + sizeof(size_t), data, body);
    data += body;
    size -= body;
    /* the strings: commName from what follows (name_len bytes, NUL added), netName the rest */
    rest = size;
    if (flags & 1) {
        size_t n = WEFT_MIN(name_len, rest);
        name = malloc(n + 1);
        if (name) {
            memcpy(name, data, n);
            name[n] = '\0';
        }
        data += n;
        rest -= n;
    }
    if (flags & 2) {
        net = malloc(rest + 1);
        if (net) {
            memcpy(net, data, rest);
            net[rest] = '\0';
        }
    }
#define SET_PTR(f, v)                                                                                              \
    do {                                                                                                           \
        if (fits(offsetof(ncclConfig_t, f), sizeof(cfg->f), declared)) {                                          \
            const char *p_ = (v);                                                                                  \
            memcpy((char *)cfg + offsetof(ncclConfig_t, f), &p_, sizeof(p_));                                      \
        }                                                                                                          \
    } while (0)
    SET_PTR(commName, name);
    SET_PTR(netName, net);
#undef SET_PTR

    magic_ok = fits(offsetof(ncclConfig_t, magic), sizeof(cfg->magic), declared) && cfg->magic == NCCL_API_MAGIC;
    blocking_fits = fits(offsetof(ncclConfig_t, blocking), sizeof(cfg->blocking), declared);
    if (blocking_fits)
        memcpy(&blocking, (char *)cfg + offsetof(ncclConfig_t, blocking), sizeof(blocking));

    last_error[0] = '\0';
    r = read_config("fuzz", cfg, &out);
    FUZZ_CHECK(r == ncclSuccess || r == ncclInvalidArgument, "read_config gave %d", (int)r);
    if (r != ncclSuccess) {
        FUZZ_CHECK(last_error[0] != '\0', "refused without a message");
    } else {
        FUZZ_CHECK(magic_ok && blocking_fits, "accepted a config whose magic or blocking is beyond its size %zu",
                   declared);
        FUZZ_CHECK(out.blocking == (blocking == 0 ? 0 : 1), "blocking %d read as %d", blocking, out.blocking);
        FUZZ_CHECK(memchr(out.name, '\0', sizeof(out.name)) != NULL, "the name is not NUL-ended");
        if (fits(offsetof(ncclConfig_t, commName), sizeof(cfg->commName), declared) && name)
            FUZZ_CHECK(strncmp(out.name, name, sizeof(out.name) - 1) == 0, "the name is not commName's start");
        else
            FUZZ_CHECK(out.name[0] == '\0', "a name without a commName that fits");
    }
    free(name);
    free(net);
    free(cfg);
    return 0;
}
