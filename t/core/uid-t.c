/* Unique ids: creation, text form, and refusal of malformed ids before
 * any network I/O. */
#include "tap/basic.h"
#include "bootstrap.h"
#include "sock.h"
#include "util.h"
#include "weft.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A listener that counts whether anybody connected to it. */
static int listener(weft_addr_t *addr)
{
    weft_addr_t bind;
    int fd;
    weft_addr_parse("127.0.0.1:1", &bind);
    weft_addr_set_port(&bind, 0);
    if (weft_sock_listen(&bind, &fd, addr) != WEFT_OK)
        bail("cannot listen: %s", strerror(errno));
    return fd;
}

static int connected(int lfd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    return poll(&p, 1, 200) > 0;
}

int main(void)
{
    weft_unique_id_t id, parsed, bad;
    char text[WEFT_UNIQUE_ID_TEXT_BYTES], small[100];
    weft_uid_info_t info;
    weft_comm_t *comm = NULL;
    int lfd, flips_refused = 1, flips_silent = 1;

    plan(16);
    is_int(WEFT_OK, weft_get_unique_id(&id), "weft_get_unique_id creates an id");
    is_int(WEFT_OK, weft_unique_id_validate(&id), "the new id validates");
    is_int(WEFT_OK, weft_unique_id_format(&id, text, sizeof(text)), "it formats as text");
    is_int(256, (long)strlen(text), "the text is 256 hex digits");
    is_int(WEFT_OK, weft_unique_id_parse(text, &parsed), "the text parses back");
    ok(memcmp(&id, &parsed, sizeof(id)) == 0, "to the same id");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_format(&id, small, sizeof(small)),
           "formatting into a short buffer is refused");
    text[100] = '\0';
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_parse(text, &parsed), "a truncated text is refused");
    weft_unique_id_format(&id, text, sizeof(text));
    text[7] = 'z';
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_parse(text, &parsed), "a non-hex character is refused");

    /* An id whose root is a listener of ours: a corrupt id must not even
     * connect to it. */
    weft_addr_t where;
    lfd = listener(&where);
    memset(&info, 0, sizeof(info));
    info.root = where;
    weft_random_bytes(info.secret, sizeof(info.secret));
    weft_uid_encode(&info, &id);
    memset(&bad, 0, sizeof(bad));
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_comm_init(&bad, 2, 0, NULL, &comm), "an all-zero id is refused");
    for (int byte = 0; byte < WEFT_UNIQUE_ID_BYTES; byte += 3) {
        bad = id;
        bad.internal[byte] ^= 1u << (byte % 8);
        if (weft_comm_init(&bad, 2, 0, NULL, &comm) != WEFT_ERR_INVALID_ARGUMENT)
            flips_refused = 0;
    }
    ok(flips_refused, "an id with any flipped bit is refused");
    ok(comm == NULL, "and no communicator was returned");
    flips_silent = !connected(lfd);
    ok(flips_silent, "without any connection to the root");
    ok(strstr(weft_get_last_error(), "unique id") != NULL, "the error says what was wrong: %s",
       weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_validate(NULL), "validate(NULL) is refused");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_get_unique_id(NULL), "get_unique_id(NULL) is refused");
    close(lfd);
    return test_done();
}
