/* Whole-buffer socket I/O for the data path: short transfers, EINTR,
 * deadlines without progress, and stop/abort descriptors. */
#include "config.h"
#include "fault.h"
#include "net_sideband.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

/* Waits for @p events on fd. WEFT_OK when ready, else why not. */
static weft_status_t wait_fd(int fd, short events, int timeout_ms, int stop_fd, int wake_fd)
{
    struct pollfd p[3] = {{fd, events, 0}, {stop_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int rc;
    do {
        rc = poll(p, 3, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return WEFT_ERR_SYSTEM;
    if (rc == 0)
        return WEFT_ERR_TIMEOUT;
    if ((p[1].revents | p[2].revents) & POLLIN)
        return WEFT_ERR_ABORTED;
    return WEFT_OK; /* readable/writable, or an error the next call reports */
}

static weft_status_t errno_status(int err)
{
    switch (err) {
    case ECONNRESET:
    case EPIPE:
    case ETIMEDOUT: /* TCP_USER_TIMEOUT or keep-alive gave up on the peer */
    case EHOSTUNREACH:
    case ENETUNREACH:
        return WEFT_ERR_REMOTE;
    default:
        return WEFT_ERR_SYSTEM;
    }
}

weft_status_t weft_net_send_all(int fd, struct iovec *iov, int iovcnt, int idle_ms, int stop_fd, int wake_fd)
{
    struct msghdr msg = {0};
    weft_status_t status;

    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)iovcnt;
    while (msg.msg_iovlen > 0) {
        ssize_t n;
        if (msg.msg_iov[0].iov_len == 0) {
            msg.msg_iov++;
            msg.msg_iovlen--;
            continue;
        }
        n = WEFT_FAULT_SENDMSG(WEFT_FAULT_NET_SEND, fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return errno_status(errno);
            if ((status = wait_fd(fd, POLLOUT, idle_ms, stop_fd, wake_fd)) != WEFT_OK)
                return status;
            continue;
        }
        /* a short write: skip what went out */
        while (n > 0) {
            size_t k = (size_t)n < msg.msg_iov[0].iov_len ? (size_t)n : msg.msg_iov[0].iov_len;
            msg.msg_iov[0].iov_base = (char *)msg.msg_iov[0].iov_base + k;
            msg.msg_iov[0].iov_len -= k;
            n -= (ssize_t)k;
            if (msg.msg_iov[0].iov_len == 0) {
                msg.msg_iov++;
                msg.msg_iovlen--;
            }
        }
    }
    return WEFT_OK;
}

weft_status_t weft_net_recv_all(int fd, void *buf, size_t len, int first_idle_ms, int idle_ms, int stop_fd,
                                int wake_fd)
{
    char *p = buf;
    size_t have = 0;
    weft_status_t status;

    while (have < len) {
        ssize_t n = WEFT_FAULT_RECV(WEFT_FAULT_NET_RECV, fd, p + have, len - have, MSG_DONTWAIT);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (n == 0)
            return WEFT_ERR_REMOTE; /* EOF */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno_status(errno);
        if ((status = wait_fd(fd, POLLIN, have ? idle_ms : first_idle_ms, stop_fd, wake_fd)) != WEFT_OK)
            return status;
    }
    return WEFT_OK;
}
