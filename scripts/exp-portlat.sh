#!/usr/bin/env bash
# Port channel latency over IPC, variant by variant, in one run (the GPU
# host: 2 processes on one GPU under MPS). Each variant is a set of
# environment variables (README, "Port channel latency"):
#
#   old       WEFT_PROXY_SPIN_NS=0 WEFT_PORT_INLINE_BYTES=0: the proxy yields
#             between triggers (256 sched_yield, then 20 us sleeps), every
#             put a cudaMemcpyAsync + cuStreamWriteValue64 (before this change)
#   spin      the proxy polls its FIFO in place for 50 us after a trigger
#             (the default where the cores outnumber twice the host's ranks)
#   inl       spin + WEFT_PORT_INLINE_BYTES=8: the 8 bytes ride in the trigger;
#             the proxy queues them and the signal as one cuStreamBatchMemOp
#   inl1      inl with WEFT_PORT_BATCH=0: two cuStreamWriteValue64 calls
#   inlnospin inl without the spin
#   store0    spin + WEFT_PORT_SIGNAL_STORE=0 (the signal copied from host memory)
#
# Every run also sets WEFT_PROXY_STATS=1: the proxy logs (stderr, kept in
# OUTDIR/VARIANT-ROUND.log) how many triggers it saw while busy, spinning,
# yielding or sleeping, and the host time each kind of trigger took to
# execute (driver calls). What is left of the round trip is the GPU's: the
# push, the copy engine or stream operations, the peer's wait.
#
# Then a correctness pass with inline puts on (values checked): the ring
# algorithms over port channels and the executor's port-channel plans.
#
# usage: scripts/exp-portlat.sh [BUILD_DIR] [OUTDIR]
#   BUILD_DIR  a --with-cuda build (default: .), OUTDIR default: ./portlat-out
# EXP_ROUNDS (environment): rounds of the whole variant list (default 3),
# interleaved so that drift hits every variant alike. EXP_BACKEND=host runs
# it all on the host backend (no MPS): a check of the script, not of the GPU.
# EXP_BW_MAX: the largest put of the bandwidth runs (default 256M).
set -u
build=${1:-.}
out=${2:-./portlat-out}
rounds=${EXP_ROUNDS:-3}
backend=${EXP_BACKEND:-cuda}
bwmax=${EXP_BW_MAX:-256M}
strict=
[ "$backend" = cuda ] && strict=gpu
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$build" || exit 1
perf=./tools/weft-perf
[ -x "$perf" ] || { echo "no $perf in $build" >&2; exit 1; }

export NCCL_NVLS_ENABLE=0 # never multicast on the shared host
# MPS: start it unless a daemon already answers; stop only what we started
started_mps=0
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/weft-mps}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/weft-mpslog}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if [ "$backend" = cuda ] && ! echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then
    nvidia-cuda-mps-control -d && started_mps=1
fi

variant_env() {
    case $1 in
    old) echo "WEFT_PROXY_SPIN_NS=0 WEFT_PORT_INLINE_BYTES=0" ;;
    spin) echo "WEFT_PROXY_SPIN_NS=50000 WEFT_PORT_INLINE_BYTES=0" ;;
    inl) echo "WEFT_PROXY_SPIN_NS=50000 WEFT_PORT_INLINE_BYTES=8 WEFT_PORT_BATCH=1" ;;
    inl1) echo "WEFT_PROXY_SPIN_NS=50000 WEFT_PORT_INLINE_BYTES=8 WEFT_PORT_BATCH=0" ;;
    inlnospin) echo "WEFT_PROXY_SPIN_NS=0 WEFT_PORT_INLINE_BYTES=8 WEFT_PORT_BATCH=1" ;;
    store0) echo "WEFT_PROXY_SPIN_NS=50000 WEFT_PORT_INLINE_BYTES=0 WEFT_PORT_SIGNAL_STORE=0" ;;
    esac
}
variants="old spin inl inl1 inlnospin store0"

summary=$out/summary.txt
: >"$summary"
for r in $(seq 1 "$rounds"); do
    for v in $variants; do
        e=$(variant_env $v)
        f=$out/$v-$r
        # p2p: flag, memory channel, LL16 and port channel round trips (the
        # median column; --bound adds "x flag" after it), puts of 1 and 4 KiB
        env $e WEFT_PROXY_STATS=1 WEFT_LOG_LEVEL=info WEFT_LOG_SUBSYS=proxy timeout 120 \
            $perf --backend $backend --ranks 2 p2p --bound -b 1K -e 4K -R 7 >"$f.txt" 2>"$f.log" ||
            echo "FAILED: $v round $r (see $f.log)" | tee -a "$summary"
        printf "%-10s round %d  port %8s us  flag %6s us  mc %6s us  [%s]\n" "$v" "$r" \
            "$(awk '/port channel put\+signal/ {print $(NF-1)}' "$f.txt" | head -1)" \
            "$(awk '/flag round trip/ {print $(NF-1)}' "$f.txt" | head -1)" \
            "$(awk '/memory channel signal/ {print $(NF-1)}' "$f.txt" | head -1)" "$e" | tee -a "$summary"
        grep "rank 0 proxy stats" "$f.log" | sed 's/^.*proxy stats: /    rank 0: /' | tee -a "$summary"
    done
done

# bandwidth: the port channel's put (the proxy's cudaMemcpyAsync, one put
# and one acknowledgement at a time) beside the local device copy, 1 KiB ..
# 256 MiB: the port/copy column (target >= 0.8 at large sizes), old and new
for v in old inl; do
    e=$(variant_env $v)
    env $e timeout 300 $perf --backend $backend --ranks 2 p2p --bound -b 1K -e "$bwmax" -R 3 >"$out/bw-$v.txt" 2>&1 ||
        echo "FAILED: bandwidth $v" | tee -a "$summary"
    echo "bandwidth [$e]: size, port(GB/s), port/copy" | tee -a "$summary"
    awk '/^  [0-9]+ / {print "   ", $1, $8, $9}' "$out/bw-$v.txt" | tee -a "$summary"
done

# correctness with inline puts (64 B, so more of the ring's pieces go
# inline), batched and not: values checked (-c 1)
for b in 1 0; do
    for c in allreduce allgather reducescatter; do
        WEFT_PORT_INLINE_BYTES=64 WEFT_PORT_BATCH=$b WEFT_DEVICE_TIMEOUT_MS=10000 timeout 120 \
            $perf --backend $backend --ranks 3 --algo ring $c -b 8 -e 1M -f 4 -n 3 -w 1 -c 1 >"$out/ring-$c-batch$b.txt" 2>&1 ||
            echo "FAILED: ring $c x3 inline batch=$b" | tee -a "$summary"
        grep -E "Out of bounds" "$out/ring-$c-batch$b.txt" | sed "s/^/ring $c inline batch=$b: /" | tee -a "$summary"
    done
done
WEFT_BACKEND=$backend WEFT_TEST_STRICT=$strict WEFT_PORT_INLINE_BYTES=64 timeout 300 \
    make check TESTS="t/coll/plan-port-t" >"$out/plan-port.txt" 2>&1 ||
    echo "FAILED: plan-port-t with inline puts (see plan-port.txt)" | tee -a "$summary"
grep -E "^(ok|not ok|# SKIP)" t/coll/plan-port-t.log 2>/dev/null | tee -a "$summary"

[ "$started_mps" = 1 ] && echo quit | nvidia-cuda-mps-control
echo "summary: $summary"
