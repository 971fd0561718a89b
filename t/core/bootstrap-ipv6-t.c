/* The bootstrap over IPv6 (the loopback interface, ::1). */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static weft_unique_id_t id;

static int rank_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    int v[8] = {0};
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init over IPv6: %s", weft_get_last_error());
    v[rank] = rank + 100;
    weft_status_t st = weft_bootstrap_allgather(comm, v, sizeof(int));
    weft_comm_destroy(comm);
    if (st != WEFT_OK)
        return rank_fail("allgather: %s", weft_get_last_error());
    for (int r = 0; r < nranks; r++)
        if (v[r] != r + 100)
            return rank_fail("slot %d is %d", r, v[r]);
    return 0;
}

int main(void)
{
    struct sockaddr_in6 a;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        skip_all("IPv6 loopback is not available here");
    close(fd);
    /* read by the ranks (the parent never reads parameters) */
    setenv("WEFT_SOCKET_IFNAME", "=lo", 1);
    setenv("WEFT_SOCKET_FAMILY", "AF_INET6", 1);
    plan(1);
    ok(run_ranks(3, 30000, rank_main, NULL, NULL), "3 ranks bootstrap and allgather over [::1]");
    return test_done();
}
