/* The host identity (hostid.h). */
#include "config.h"
#include "hostid.h"
#include "auth.h"
#include "param.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return -1;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

weft_status_t weft_host_identity(uint8_t out[WEFT_HOSTID_BYTES])
{
    const char *override = weft_param_str(WEFT_P_HOSTID);
    uint8_t digest[32];
    char text[512] = "";
    char part[160];

    if (override && *override) {
        snprintf(text, sizeof(text), "override:%s", override);
    } else {
        /* Processes can share memory when they run on the same booted
         * kernel; a separate network namespace counts as another host so
         * that namespace tests exercise the network path. */
        if (gethostname(part, sizeof(part)) == 0) {
            part[sizeof(part) - 1] = '\0';
            strncat(text, part, sizeof(text) - strlen(text) - 1);
        }
        if (read_small_file("/proc/sys/kernel/random/boot_id", part, sizeof(part)) > 0)
            strncat(text, part, sizeof(text) - strlen(text) - 1);
        ssize_t n = readlink("/proc/self/ns/net", part, sizeof(part) - 1);
        if (n > 0) {
            part[n] = '\0';
            strncat(text, part, sizeof(text) - strlen(text) - 1);
        }
    }
    weft_sha256(text, strlen(text), digest);
    memcpy(out, digest, 16);
    return WEFT_OK;
}
