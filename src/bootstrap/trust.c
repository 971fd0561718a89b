/* WEFT_TRUST_LOCAL's secret file: see trust.h. */
#include "config.h"
#include "trust.h"
#include "auth.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int private_dir(const char *path)
{
    struct stat st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        weft_error(WEFT_SUB_BOOT, "trust-local: cannot create %s: %s", path, strerror(errno));
        return 0;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        weft_error(WEFT_SUB_BOOT, "trust-local: %s is not a private directory of this user (mode 0700 expected)",
                   path);
        return 0;
    }
    return 1;
}

/* The file's path; 0 if the directory is not private. */
static int secret_path(const weft_addr_t *root, char *buf, size_t len, int make_dir)
{
    const char *base = weft_param_str(WEFT_P_IPC_DIR);
    char addr[80], dir[200];
    int n;
    if (!base || !*base)
        base = weft_param_env_now(WEFT_P_XDG_RUNTIME_DIR);
    if (!base || !*base || access(base, W_OK) != 0)
        base = "/tmp";
    snprintf(dir, sizeof(dir), "%s/weft-%u", base, (unsigned)geteuid());
    if (make_dir && !private_dir(dir))
        return 0;
    weft_addr_format(root, addr, sizeof(addr));
    for (char *p = addr; *p; p++)
        if (!(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && *p != '.')
            *p = '_';
    n = snprintf(buf, len, "%s/trust-%s", dir, addr);
    return n > 0 && (size_t)n < len;
}

static weft_status_t write_secret(const char *path, uint8_t *secret)
{
    char tmp[320];
    int fd;
    weft_status_t status;
    if ((status = weft_random_bytes(secret, WEFT_TRUST_SECRET_BYTES)) != WEFT_OK)
        return status;
    if (snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return WEFT_ERR_INVALID_ARGUMENT;
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, secret, WEFT_TRUST_SECRET_BYTES) != WEFT_TRUST_SECRET_BYTES || fsync(fd) != 0 ||
        close(fd) != 0 || rename(tmp, path) != 0) {
        weft_error(WEFT_SUB_BOOT, "trust-local: cannot write %s: %s", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

/* 1 read, 0 not there (yet), -1 refused. */
static int read_secret(const char *path, uint8_t *secret)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), ok;
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        weft_error(WEFT_SUB_BOOT, "trust-local: %s is not a private file of this user (mode 0600 expected)", path);
        return -1;
    }
    ok = read(fd, secret, WEFT_TRUST_SECRET_BYTES) == WEFT_TRUST_SECRET_BYTES;
    close(fd);
    return ok ? 1 : 0; /* short: rank 0 is still writing (rename makes it unlikely) */
}

static int root_listens(const weft_addr_t *root)
{
    int fd = socket(root->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;
    if (fd < 0)
        return 0;
    ok = connect(fd, &root->u.sa, root->len) == 0;
    close(fd);
    return ok;
}

weft_status_t weft_trust_local_secret(const weft_addr_t *root, int create, int timeout_ms,
                                      uint8_t secret[WEFT_TRUST_SECRET_BYTES])
{
    char path[300];
    uint64_t deadline = weft_deadline_ms(timeout_ms);
    if (!secret_path(root, path, sizeof(path), 1)) {
        weft_error(WEFT_SUB_BOOT, "trust-local: no private directory for the job's secret (set WEFT_IPC_DIR)");
        return WEFT_ERR_SYSTEM;
    }
    if (create)
        return write_secret(path, secret);
    /* Rank 0 writes the file before it starts the root: once the root
     * listens, the file is this job's, not a crashed one's. */
    while (!root_listens(root)) {
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_BOOT, "trust-local: no root at the agreed address within %d ms", timeout_ms);
            return WEFT_ERR_TIMEOUT;
        }
        poll(NULL, 0, 20);
    }
    for (;;) {
        int r = read_secret(path, secret);
        if (r > 0)
            return WEFT_OK;
        if (r < 0) {
            if (errno == EACCES || errno == EPERM)
                weft_error(WEFT_SUB_BOOT, "trust-local: cannot read %s: %s", path, strerror(errno));
            return WEFT_ERR_AUTH;
        }
        if (weft_ms_left(deadline) == 0) {
            weft_error(WEFT_SUB_BOOT, "trust-local: rank 0 wrote no secret at %s within %d ms", path, timeout_ms);
            return WEFT_ERR_TIMEOUT;
        }
        poll(NULL, 0, 20);
    }
}

void weft_trust_local_forget(const weft_addr_t *root)
{
    char path[300];
    if (secret_path(root, path, sizeof(path), 0))
        unlink(path);
}
