#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (t/fuzz/corpus/<target>/).

Run from t/fuzz/ after changing a wire format; the seeds are committed.
The job secret is the one of fuzz.h (bytes 0x40 + i), so hellos carry
the right job tag.
"""
import hashlib
import os
import struct

SECRET = bytes(0x40 + i for i in range(32))
JOB = hashlib.sha256(b"weft-job:" + SECRET).digest()[:16]


def put(target, name, data):
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def addr_v4(a, b, c, d, port):
    return struct.pack("<BBH", 4, 0, 0)[:2] + struct.pack(">H", port) + b"\0" * 4 + bytes([a, b, c, d]) + b"\0" * 12


def addr_v6(addr16, port, scope=0):
    return bytes([6, 0]) + struct.pack(">H", port) + struct.pack("<I", scope) + addr16


# -- unique id --------------------------------------------------------------
def uid(root, secret):
    b = bytearray(128)
    b[0:4] = b"WFTU"
    b[4] = 1
    b[8:32] = root
    b[32:64] = secret
    b[120:128] = hashlib.sha256(bytes(b[:120])).digest()[:8]
    return bytes(b)


good = uid(addr_v4(127, 0, 0, 1, 29500), SECRET)
put("uid", "text", good.hex().encode())
put("uid", "text-spaces", b"  \n" + good.hex().upper().encode() + b"\t\n")
put("uid", "text-v6", uid(addr_v6(b"\0" * 15 + b"\1", 80), SECRET).hex().encode())
put("uid", "text-bad-digit", good.hex()[:-1].encode() + b"g")
put("uid", "text-short", good.hex()[:100].encode())
put("uid", "binary-fixed-checksum", good)
put("uid", "binary-zero-secret", uid(addr_v4(10, 0, 0, 1, 1), bytes(32)))
put("uid", "binary-no-port", uid(addr_v4(10, 0, 0, 1, 0), SECRET))
put("uid", "empty", b"")

# -- bootstrap frames and hello ------------------------------------------------
def hello(purpose, version=1, job=JOB, reserved=b"\0" * 8):
    return struct.pack("<IHH", 0x57465448, version, purpose) + job + bytes(range(32)) + reserved


def frame(ftype, payload, seq, magic=0x46544657, version=1):
    return struct.pack("<IBBHII", magic, version, ftype, 0, len(payload), seq) + payload


REGISTER = struct.pack("<II", 1, 4) + addr_v4(127, 0, 0, 1, 4000) + b"H" * 16 + struct.pack("<I", 99) + b"\0" * 12
TABLE = struct.pack("<I", 2) + (addr_v4(127, 0, 0, 1, 4000) + b"H" * 16 + struct.pack("<II", 7, 0)) * 2
ERROR = struct.pack("<i", -7) + b"rank 3 refused: \x01bad\x7f"
for p in range(4):
    put("frames", "server-hello-%d" % p, bytes([0, p]) + hello(p + 1) + b"\0" * 32)
    put("frames", "client-hello-%d" % p, bytes([1, p]) + hello(p + 1) + b"P" * 32)
put("frames", "server-hello-other-job", bytes([0, 0]) + hello(1, job=b"\1" * 16))
put("frames", "server-hello-version", bytes([0, 1]) + hello(2, version=2))
put("frames", "frames-register", bytes([2, 0]) + frame(1, REGISTER, 0))
put("frames", "frames-table", bytes([2, 0]) + frame(2, TABLE, 0))
put("frames", "frames-error", bytes([2, 1]) + frame(3, ERROR, 0))
put("frames", "frames-many", bytes([2, 1]) + frame(4, struct.pack("<Q", 3), 0) +
    frame(5, struct.pack("<Q", 77) + b"payload", 1) + frame(5, struct.pack("<Q", 78), 2) + frame(3, ERROR, 3))
put("frames", "frames-out-of-sequence", bytes([2, 1]) + frame(5, struct.pack("<Q", 1), 1))
put("frames", "frames-too-long", bytes([2, 0]) + frame(1, REGISTER + b"x" * 100, 0))
put("frames", "frames-huge-data", bytes([2, 1]) + struct.pack("<IBBHII", 0x46544657, 1, 5, 0, 0x7fffffff, 0))
put("frames", "frames-ipc", bytes([2, 2]) + frame(6, struct.pack("<Q", 5), 0) + frame(7, struct.pack("<i", 0), 1))
put("frames", "fd-reply", bytes([3, 2]) + frame(7, struct.pack("<i", 0), 0))
put("frames", "fd-reply-wrong-type", bytes([3, 2]) + frame(6, struct.pack("<i", 0), 0))

# -- memory handles ---------------------------------------------------------------
def handle(owner=1, transports=1, size=8192, offset=4096, alloc=65536, export=0, blob_len=16):
    b = bytearray(256)
    b[0:4] = b"WFTM"
    b[4] = 1
    struct.pack_into("<II", b, 8, owner, transports)
    struct.pack_into("<QQQQ", b, 48, size, offset, alloc, export)
    struct.pack_into("<QI", b, 80, 0x7f0000001000, blob_len)
    return bytes(b)


put("mem", "template", bytes([0x1f]))
put("mem", "all-fields", bytes([0x1f]) + handle())
put("mem", "self", bytes([0x1f]) + handle(owner=0))
put("mem", "owner-out-of-range", bytes([0x1f]) + handle(owner=2))
put("mem", "past-allocation", bytes([0x1f]) + handle(offset=60000, size=8192))
put("mem", "whole-allocation", bytes([0x1f]) + handle(offset=0, size=65536))
put("mem", "offset-overflow", bytes([0x1f]) + handle(offset=(1 << 64) - 8, size=16))
put("mem", "zero-alloc-size", bytes([0x0f]) + handle(alloc=0)[:72])
put("mem", "network-only", bytes([0x1f]) + handle(transports=2))
put("mem", "no-checksum", bytes([0x00]) + handle())
put("mem", "other-job", bytes([0x1d]) + handle())

# -- side-band IDENT frames --------------------------------------------------------
def ident(frm, to, seq, index, nsock, tail=0):
    return struct.pack("<6I", frm, to, seq, index, nsock, tail)


def sock(payload, ftype=4):
    return bytes([ftype, len(payload)]) + payload


put("sideband", "two-sockets", bytes([0, 0, 16]) + sock(ident(0, 1, 0, 0, 2)) + sock(ident(0, 1, 0, 1, 2)))
put("sideband", "one-of-two", bytes([0, 0, 16]) + sock(ident(0, 1, 0, 1, 2)))
put("sideband", "duplicate-index", bytes([2, 1, 16]) + sock(ident(2, 1, 1, 0, 2)) + sock(ident(2, 1, 1, 0, 2)))
put("sideband", "counts-disagree", bytes([0, 0, 16]) + sock(ident(0, 1, 0, 0, 1)) + sock(ident(0, 1, 0, 1, 2)))
put("sideband", "too-many-for-room", bytes([0, 0, 1]) + sock(ident(0, 1, 0, 0, 2)) + sock(ident(0, 1, 0, 1, 2)))
put("sideband", "other-connection", bytes([0, 0, 16]) + sock(ident(3, 1, 2, 0, 1)) + sock(ident(0, 1, 0, 0, 1)))
put("sideband", "wrong-rank", bytes([0, 0, 16]) + sock(ident(0, 5, 0, 0, 1)))
put("sideband", "short-ident", bytes([0, 0, 16]) + sock(ident(0, 1, 0, 0, 1)[:20]))
put("sideband", "error-frame", bytes([0, 0, 16]) + sock(struct.pack("<i", -3) + b"no", 3))
put("sideband", "sixteen", bytes([2, 3, 16]) + b"".join(sock(ident(2, 1, 3, i, 8)) for i in range(8)))
# the listener's job has 3 ranks (sideband-fuzz.c): IDENTs naming rank 3, this rank (1) or a huge rank are forged
put("sideband", "forged-rank", bytes([3, 0, 16]) + sock(ident(3, 1, 0, 0, 1)) + sock(ident(0, 1, 0, 0, 1)))
put("sideband", "forged-self", bytes([1, 0, 16]) + sock(ident(1, 1, 0, 0, 1)))
put("sideband", "forged-huge-rank", bytes([0, 0, 16]) + sock(ident(0x7fffffff, 1, 0, 0, 1)) + sock(ident(0, 1, 0, 0, 1)))

# -- ncclConfig_t as callers of other nccl.h versions pass it ----------------------------
# u16 declared size | u8 flags (1: commName, 2: netName) | u8 commName length | the struct after its
# size field (ncclConfig_t of nccl.h: 96 bytes on LP64) | the strings
UNDEF = -(2 ** 31)
CFG_MAGIC = 0xcafebeef
CFG_VERSION = 23000
MAX_CFG = 1024


def config(size, blocking=UNDEF, ints=None, magic=CFG_MAGIC, version=CFG_VERSION):
    """the bytes after the size field of a full struct; the fuzzer cuts them at size"""
    cga, lo, hi = (ints or {}).get("cga", UNDEF), (ints or {}).get("min", UNDEF), (ints or {}).get("max", UNDEF)
    body = struct.pack("<IIiiii", magic, version, blocking, cga, lo, hi)
    body += struct.pack("<Q", 0)                     # netName (set by the target)
    body += struct.pack("<ii", UNDEF, (ints or {}).get("tc", UNDEF))  # splitShare, trafficClass
    body += struct.pack("<Q", 0)                     # commName (set by the target)
    body += struct.pack("<10i", *([UNDEF] * 10))     # collnetEnable .. graphStreamOrdering
    return body


def nccl_seed(size, flags, name, body, net=b""):
    body = (body + bytes(MAX_CFG))[:max(size, 8) - 8]  # the target allocates max(size, 8) bytes
    return struct.pack("<HBB", size, flags, len(name)) + body + name + net


put("ncclconfig", "initializer", nccl_seed(96, 3, b"my-comm", config(96), b"IB"))
put("ncclconfig", "nonblocking", nccl_seed(96, 1, b"x", config(96, blocking=0)))
put("ncclconfig", "older-2.18", nccl_seed(56, 1, b"older", config(96)))  # up to commName
put("ncclconfig", "older-2.14", nccl_seed(32, 0, b"", config(96, blocking=1)))  # up to maxCTAs
put("ncclconfig", "blocking-only", nccl_seed(20, 0, b"", config(96, blocking=0)))
put("ncclconfig", "before-blocking", nccl_seed(16, 0, b"", config(96)))
put("ncclconfig", "size-only", nccl_seed(8, 0, b"", b""))
put("ncclconfig", "size-zero", nccl_seed(0, 0, b"", b""))
put("ncclconfig", "magic-cut", nccl_seed(10, 0, b"", config(96)))
put("ncclconfig", "newer-larger", nccl_seed(400, 1, b"newer", config(96) + bytes(304)))
put("ncclconfig", "bad-magic", nccl_seed(96, 0, b"", config(96, magic=0x12345678)))
put("ncclconfig", "bad-blocking", nccl_seed(96, 0, b"", config(96, blocking=7)))
put("ncclconfig", "ctas-crossed", nccl_seed(96, 0, b"", config(96, ints={"min": 8, "max": 2})))
put("ncclconfig", "ctas-range", nccl_seed(96, 0, b"", config(96, ints={"min": 0, "max": 5000})))
put("ncclconfig", "traffic-class", nccl_seed(96, 0, b"", config(96, ints={"tc": 256})))
put("ncclconfig", "long-name", nccl_seed(96, 1, b"n" * 200, config(96)))
put("ncclconfig", "empty-name", nccl_seed(96, 3, b"", config(96)))

# -- ethernet data frames -------------------------------------------------------------
KEY_A = 0x6b65792d41414141
KEY_B = 0x6b65792d42424242


def eth(ftype, region, key, off, arg, body=b""):
    return struct.pack("<IBBHIIQQQ", 0x45544657, ftype, 0, 0, region, 0, key, off, arg) + body


def chunks(sockno, data):
    out = b""
    for i in range(0, len(data), 255):
        part = data[i:i + 255]
        out += bytes([sockno, len(part)]) + part
    return out


def need(nsock, *counts):
    return b"".join(struct.pack("<Q", c) for c in (list(counts) + [0] * nsock)[:nsock])


put("ethernet", "write", bytes([0]) + chunks(0, eth(1, 1, KEY_A, 0, 16, b"w" * 16)))
put("ethernet", "write-last-byte", bytes([0]) + chunks(0, eth(1, 1, KEY_A, 4095, 1, b"z")))
put("ethernet", "write-past-end", bytes([0]) + chunks(0, eth(1, 1, KEY_A, 4090, 16, b"x" * 16)))
put("ethernet", "write-wraps", bytes([0]) + chunks(0, eth(1, 1, KEY_A, (1 << 64) - 4, 8, b"y" * 8)))
put("ethernet", "write-wrong-key", bytes([0]) + chunks(0, eth(1, 1, KEY_B, 0, 4, b"k" * 4)))
put("ethernet", "signal", bytes([0]) + chunks(0, eth(2, 2, KEY_B, 8, 5, need(1))))
put("ethernet", "add-misaligned", bytes([0]) + chunks(0, eth(3, 2, KEY_B, 9, 5, need(1))))
put("ethernet", "signal-last-word", bytes([0]) + chunks(0, eth(2, 2, KEY_B, 24, 5, need(1))))
put("ethernet", "signal-past-end", bytes([0]) + chunks(0, eth(2, 2, KEY_B, 32, 5, need(1))))
put("ethernet", "two-sockets", bytes([1]) + chunks(1, eth(1, 1, KEY_A, 100, 300, b"s" * 300)) +
    chunks(0, eth(2, 2, KEY_B, 0, 1, need(2, 0, 1))) + chunks(0, eth(4, 0, 0, 0, 0)) + chunks(1, eth(4, 0, 0, 0, 0)))
put("ethernet", "signal-waits-forever", bytes([1]) + chunks(0, eth(2, 2, KEY_B, 0, 1, need(2, 0, 9))))
put("ethernet", "bye", bytes([3]) + b"".join(chunks(i, eth(4, 0, 0, 0, 0)) for i in range(4)))
put("ethernet", "bad-magic", bytes([0]) + chunks(0, b"\0" * 40))
put("ethernet", "unknown-type", bytes([0]) + chunks(0, eth(9, 1, KEY_A, 0, 0)))

# -- parameter parsers ----------------------------------------------------------------
for i, text in enumerate([b"127.0.0.1:29500", b"[::1]:80", b"[fe80::1%1]:5", b"10.1.2.3:0", b"10.1.2.3:65536",
                          b"host:1:2", b"[::1]", b":5", b"1.2.3.4:+5", b"[" + b"1" * 300 + b"]:1"]):
    put("params", "addr-%d" % i, bytes([0, 0]) + text)
for i, (rng, text) in enumerate([(0, b"123"), (0, b"-9223372036854775808"), (0, b"9223372036854775808"),
                                 (1, b" 65535"), (2, b"16x"), (3, b"-1"), (3, b"+0"), (0, b"")]):
    put("params", "int-%d" % i, bytes([1, rng]) + text)
for i, (port, text) in enumerate([(0x80, b"eth,ib\neth0"), (0x80, b"^docker,virbr\ndocker0"),
                                  (1, b"=mlx5_0:1,mlx5_1\nmlx5_0"), (2, b"mlx5:2\nmlx5_3"), (0x80, b"\neth0"),
                                  (5, b"a:99999999999999,b:\na")]):
    put("params", "names-%d" % i, bytes([2, port]) + text)
put("params", "hex-0", bytes([3, 0]) + b"00ffA5e1")
put("params", "hex-1", bytes([3, 0]) + b"0g")

# -- execution plans ------------------------------------------------------------------
# A few plans of t/coll/plans, compact (they must fit FUZZ_MAX_LEN), and
# near-misses of the validator's index checks.
import json  # noqa: E402

for name in ["mscclpp-dsl-units/unit_tests__copy_test", "mscclpp-dsl-units/unit_tests__barrier_test",
             "mscclpp-dsl-units/unit_tests__pipeline_test", "mscclpp-dsl-units/unit_tests__semaphore",
             "mscclpp-dsl-units/unit_tests__put_packet_test", "mscclpp-dsl-units/unit_tests__switch_broadcast_test",
             "mscclpp-dsl-units/tbg__tbg_copy_test", "mscclpp-dsl-units/signal_wait__signal_wait_test",
             "mscclpp-dsl-units/put__put_with_signal_and_flush_test", "mscclpp/transfer_pack"]:
    with open(os.path.join("..", "coll", "plans", name + ".json")) as f:
        plan = json.load(f)
    put("plan", name.split("/")[1], json.dumps(plan, separators=(",", ":")).encode())
TMPL = ('{"name":"t","collective":"allreduce","protocol":"Simple","inplace":false,"gpus":['
        '{"id":0,"input_chunks":8,"output_chunks":8,"scratch_chunks":0,'
        '"channels":[{"channel_type":"memory","connected_to":[1]}],"remote_buffers":[],"semaphores":[],'
        '"threadblocks":[{"id":0,"channels":[{"channel_type":"memory","channel_ids":[0]}],'
        '"ops":[{"name":"signal","channel_type":"memory","channel_ids":[0]}]}]},'
        '{"id":1,"input_chunks":8,"output_chunks":8,"scratch_chunks":0,'
        '"channels":[{"channel_type":"memory","connected_to":[0]}],"remote_buffers":[],"semaphores":[],'
        '"threadblocks":[{"id":0,"channels":[{"channel_type":"memory","channel_ids":[0]}],'
        '"ops":[{"name":"wait","channel_type":"memory","channel_ids":[%s]},'
        '{"name":"copy","src_buff":[{"type":"i","index":%s,"size":%s}],'
        '"dst_buff":[{"type":"%s","index":0,"size":1}]}]}]}]}')
for i, v in enumerate([("0", "7", "1", "o"), ("0", "8", "1", "o"), ("0", "7", "2", "o"), ("1", "0", "1", "o"),
                       ("0", "0", "1", "x"), ("0", "-1", "1", "o"), ("0", "4294967295", "4294967295", "s"),
                       ("0", "0", "0", "i"), ("\"0\"", "0", "1", "o")]):
    put("plan", "index-%d" % i, (TMPL % v).encode())
put("plan", "truncated", (TMPL % ("0", "1", "1", "o")).encode()[:300])
put("plan", "not-an-object", b"[1,2,3]")
