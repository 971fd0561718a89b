/* Ranks started by an external launcher: rank and size from torchrun,
 * Open MPI, PMI or Slurm variables, the root from WEFT_ROOT, the secret
 * from WEFT_UNIQUE_ID or (opt-in, loopback only) WEFT_TRUST_LOCAL. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "bootstrap.h"
#include "util.h"
#include "weft.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    const char *rank_var, *size_var;
    int with_id;
} style_t;

static char root[64];
static char id_text[WEFT_UNIQUE_ID_TEXT_BYTES];

static int rank_main(int rank, int nranks, void *arg)
{
    const style_t *s = arg;
    char buf[16];
    weft_comm_t *comm;
    int r = -1, n = -1;
    /* The environment is set before the library reads it. */
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv(s->rank_var, buf, 1);
    snprintf(buf, sizeof(buf), "%d", nranks);
    setenv(s->size_var, buf, 1);
    setenv("WEFT_ROOT", root, 1);
    if (s->with_id)
        setenv("WEFT_UNIQUE_ID", id_text, 1);
    else
        setenv("WEFT_TRUST_LOCAL", "1", 1);
    rank_step("weft_comm_init_from_env");
    weft_status_t st = weft_comm_init_from_env(NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("init_from_env: %s: %s", weft_status_string(st), weft_get_last_error());
    weft_comm_rank(comm, &r);
    weft_comm_size(comm, &n);
    st = weft_bootstrap_barrier(comm);
    weft_comm_destroy(comm);
    if (r != rank || n != nranks)
        return rank_fail("rank %d of %d, expected %d of %d", r, n, rank, nranks);
    return st == WEFT_OK ? 0 : rank_fail("barrier: %s", weft_get_last_error());
}

static int no_env(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    (void)rank;
    (void)nranks;
    (void)arg;
    unsetenv("WEFT_ROOT");
    unsetenv("WEFT_UNIQUE_ID");
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    if (weft_comm_init_from_env(NULL, &comm) != WEFT_ERR_INVALID_ARGUMENT)
        return rank_fail("no WEFT_ROOT/WEFT_UNIQUE_ID was accepted");
    setenv("WEFT_ROOT", "10.1.2.3:4000", 1);
    setenv("WEFT_TRUST_LOCAL", "1", 1);
    if (weft_comm_init_from_env(NULL, &comm) != WEFT_ERR_INVALID_ARGUMENT)
        return rank_fail("trust-local with a non-loopback root was accepted");
    return 0;
}

static int bad_rank(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    (void)rank;
    (void)nranks;
    (void)arg;
    setenv("RANK", "5", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("WEFT_ROOT", "127.0.0.1:4000", 1);
    return weft_comm_init_from_env(NULL, &comm) == WEFT_ERR_INVALID_ARGUMENT ? 0
                                                                             : rank_fail("RANK=5 of 2 accepted");
}

int main(void)
{
    static const style_t styles[] = {
        {"RANK", "WORLD_SIZE", 1},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", 1},
        {"PMI_RANK", "PMI_SIZE", 1},
        {"SLURM_PROCID", "SLURM_NTASKS", 1},
        {"RANK", "WORLD_SIZE", 0},
    };
    plan(7);
    for (size_t i = 0; i < sizeof(styles) / sizeof(styles[0]); i++) {
        weft_unique_id_t id;
        weft_uid_info_t info;
        /* Only the secret of this id is used; WEFT_ROOT says where rank 0
         * listens. Made without starting a root: the parent stays
         * single-threaded for fork. */
        snprintf(root, sizeof(root), "127.0.0.1:%d", tap_free_port());
        memset(&info, 0, sizeof(info));
        weft_addr_parse(root, &info.root);
        weft_random_bytes(info.secret, sizeof(info.secret));
        weft_uid_encode(&info, &id);
        weft_unique_id_format(&id, id_text, sizeof(id_text));
        ok(run_ranks(3, 30000, rank_main, (void *)&styles[i], NULL), "3 ranks from %s/%s%s", styles[i].rank_var,
           styles[i].size_var, styles[i].with_id ? " with WEFT_UNIQUE_ID" : " with WEFT_TRUST_LOCAL=1");
    }
    ok(run_ranks(1, 10000, no_env, NULL, NULL), "without a root or a secret, init_from_env refuses");
    ok(run_ranks(1, 10000, bad_rank, NULL, NULL), "an out-of-range launcher rank is refused");
    return test_done();
}
