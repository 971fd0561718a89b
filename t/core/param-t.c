/* Parameters, interface filters, address parsing and wire forms. */
#include "tap/basic.h"
#include "param.h"
#include "sock.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    weft_addr_t a, b;
    uint8_t wire[WEFT_ADDR_WIRE_BYTES];
    char text[80];
    long v;

    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "1234", 1);
    setenv("WEFT_BOOTSTRAP_MAX_PENDING", "12abc", 1);
    plan(22);
    is_int(1234, weft_param_int(WEFT_P_HANDSHAKE_TIMEOUT_MS), "an integer parameter is read from the environment");
    is_int(64, weft_param_int(WEFT_P_BOOTSTRAP_MAX_PENDING), "an unparsable value falls back to the default");
    ok(!weft_param_info(WEFT_P_BOOTSTRAP_MAX_PENDING)->valid, "and is marked invalid for weft-info -c");
    is_string("host", weft_param_str(WEFT_P_BACKEND), "string parameters have defaults");

    ok(weft_ifname_match("eth", "eth0") && !weft_ifname_match("eth", "ib0"), "interface prefix match");
    ok(!weft_ifname_match("^eth,lo", "eth1") && weft_ifname_match("^eth,lo", "ib0"), "interface exclusion");
    ok(weft_ifname_match("=eth0", "eth0") && !weft_ifname_match("=eth0", "eth01"), "exact interface match");

    is_int(WEFT_OK, weft_addr_parse("127.0.0.1:5000", &a), "IPv4 host:port parses");
    weft_addr_format(&a, text, sizeof(text));
    is_string("127.0.0.1:5000", text, "and formats back");
    ok(weft_addr_is_loopback(&a), "127.0.0.1 is loopback");
    is_int(WEFT_OK, weft_addr_parse("[::1]:7", &a), "IPv6 [addr]:port parses");
    weft_addr_format(&a, text, sizeof(text));
    is_string("[::1]:7", text, "and formats back");
    weft_addr_to_wire(&a, wire);
    ok(weft_addr_from_wire(wire, &b) == WEFT_OK && memcmp(&a.u.in6.sin6_addr, &b.u.in6.sin6_addr, 16) == 0 &&
           weft_addr_port(&b) == 7,
       "IPv6 addresses survive the wire form");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_addr_parse("127.0.0.1", &a), "a missing port is refused");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_addr_parse("127.0.0.1:0", &a), "port 0 is refused");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_addr_parse("127.0.0.1:70000", &a), "port 70000 is refused");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_addr_parse("::1:80", &a), "unbracketed IPv6 is refused");
    memset(wire, 0, sizeof(wire));
    wire[0] = 5;
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_addr_from_wire(wire, &a), "an unknown family on the wire is refused");

    ok(weft_parse_long("42", 0, 100, &v) && v == 42, "strict integer parse");
    ok(!weft_parse_long("42x", 0, 100, &v) && !weft_parse_long("", 0, 100, &v) &&
           !weft_parse_long("101", 0, 100, &v),
       "trailing junk, empty and out-of-range integers are refused");
    {
        uint8_t in[3] = {0x00, 0xab, 0xff}, out[3];
        char hex[7];
        weft_hex_encode(in, 3, hex);
        ok(strcmp(hex, "00abff") == 0 && weft_hex_decode(hex, 3, out) && memcmp(in, out, 3) == 0,
           "hex round trip");
        ok(!weft_hex_decode("0g", 1, out), "a bad hex digit is refused");
    }
    return test_done();
}
