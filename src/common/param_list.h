/*
 * Every environment parameter of weft, declared once:
 * WEFT_PARAM(id, NAME, type, default, help)
 * type: INT (long), STR. Read once from the environment (weft_param_*).
 * `weft-info -c` prints them all with their current values.
 *
 * Every INT parameter also has a range, in the second list below:
 * WEFT_PARAM_RANGE(id, min, max, kind), kind NUM or SIZE (a size also
 * takes a K, M or G suffix: 4K = 4096). The communicator's check, run by every
 * communicator init, refuses a value that does not parse or is out of
 * range, naming the variable.
 *
 * A backend's own knobs are declared next to it, in a section it
 * registers (param.h: WEFT_PARAM_SECTION): ethernet_setup.c, ib_ctx.c,
 * gpurt.c, cuda_vmm.c.
 */
WEFT_PARAM(LOG_LEVEL, "WEFT_LOG_LEVEL", STR, "warn",
           "log level: none, error, warn, info, debug, trace")
WEFT_PARAM(LOG_SUBSYS, "WEFT_LOG_SUBSYS", STR, "all",
           "comma-separated subsystems to log (init,boot,net,mem,ipc,gpu,coll,proxy,all); ^list excludes")
WEFT_PARAM(LOG_FILE, "WEFT_LOG_FILE", STR, "",
           "log to this file instead of stderr; %h is replaced by the host name, %p by the pid")
WEFT_PARAM(BACKEND, "WEFT_BACKEND", STR, "host",
           "GPU backend: host, cuda or hip")
WEFT_PARAM(SOCKET_IFNAME, "WEFT_SOCKET_IFNAME", STR, "",
           "interfaces for bootstrap and TCP (prefix match; ^a,b excludes; =name exact)")
WEFT_PARAM(SOCKET_FAMILY, "WEFT_SOCKET_FAMILY", STR, "",
           "address family to prefer: AF_INET or AF_INET6 (default: either)")
WEFT_PARAM(INIT_TIMEOUT_MS, "WEFT_INIT_TIMEOUT_MS", INT, "120000",
           "deadline for communicator creation (all ranks joining), ms")
WEFT_PARAM(BOOTSTRAP_TIMEOUT_MS, "WEFT_BOOTSTRAP_TIMEOUT_MS", INT, "120000",
           "deadline of one bootstrap operation (allgather, barrier, recv, ...), ms")
WEFT_PARAM(HANDSHAKE_TIMEOUT_MS, "WEFT_HANDSHAKE_TIMEOUT_MS", INT, "5000",
           "deadline for a new connection to authenticate and identify itself, ms")
WEFT_PARAM(BOOTSTRAP_MAX_PENDING, "WEFT_BOOTSTRAP_MAX_PENDING", INT, "64",
           "unauthenticated connections a listener keeps; beyond it the oldest is dropped")
WEFT_PARAM(BOOTSTRAP_MAX_MSG, "WEFT_BOOTSTRAP_MAX_MSG", INT, "268435456",
           "largest bootstrap message accepted, bytes")
WEFT_PARAM(ROOT, "WEFT_ROOT", STR, "",
           "host:port of the bootstrap root for launcher-started jobs (rank 0 listens there)")
WEFT_PARAM(UNIQUE_ID, "WEFT_UNIQUE_ID", STR, "",
           "unique id (text form) for launcher-started jobs: gives the secret (and root if WEFT_ROOT is unset)")
WEFT_PARAM(TRUST_LOCAL, "WEFT_TRUST_LOCAL", INT, "0",
           "1: derive the secret from the user id when WEFT_ROOT is a loopback address (single trusted host only)")
WEFT_PARAM(PEER_LOSS_GRACE_MS, "WEFT_PEER_LOSS_GRACE_MS", INT, "1000",
           "a peer's bootstrap link that hangs up fails this rank's device waits with an error naming the peer "
           "after this long (a peer that destroyed or aborted its communicator is gone too), ms")
WEFT_PARAM(HOSTID, "WEFT_HOSTID", STR, "",
           "override the host identity (ranks with equal ids share memory)")
WEFT_PARAM(IPC_DIR, "WEFT_IPC_DIR", STR, "",
           "directory for per-job Unix sockets (default: $XDG_RUNTIME_DIR or /tmp)")
WEFT_PARAM(HOST_MAX_BLOCKS, "WEFT_HOST_MAX_BLOCKS", INT, "64",
           "host backend: the most blocks one launch may have (block threads start as launches need them)")
WEFT_PARAM(HOST_SPIN_NS, "WEFT_HOST_SPIN_NS", INT, "-1",
           "host backend: how long a waiting thread spins in place before it yields, ns (-1: 20000 where the "
           "ranks of this host are no more than the cores the process may use, or it may use 4 or more; else 0)")
WEFT_PARAM(NVLS_ENABLE, "WEFT_NVLS_ENABLE", INT, "0",
           "1 enables the switch channel (NVLink multicast) where the GPU has it; also off when NCCL_NVLS_ENABLE=0")
WEFT_PARAM(DEVICE_TIMEOUT_MS, "WEFT_DEVICE_TIMEOUT_MS", INT, "60000",
           "longest wait of device code (semaphore, packet, FIFO, flush) before it records a timeout, ms")
WEFT_PARAM(ALGO, "WEFT_ALGO", STR, "",
           "algorithm overrides, e.g. allreduce:packet,allgather:mesh (weft-info -a lists them)")
WEFT_PARAM(PLAN_DIR, "WEFT_PLAN_DIR", STR, "",
           "directory of execution plans (*.json, MSCCL++ format) that the collectives use before the built-in "
           "algorithms where a plan matches the call (weft-info -a lists them; WEFT_ALGO=allreduce:plan:NAME forces one)")
WEFT_PARAM(COLL_SCRATCH_BYTES, "WEFT_COLL_SCRATCH_BYTES", INT, "8388608",
           "per-rank scratch for collectives, bytes (two regions of half each)")
WEFT_PARAM(COLL_PACKET_MAX_BYTES, "WEFT_COLL_PACKET_MAX_BYTES", INT, "65536",
           "largest message of the LL packet algorithms, bytes")
WEFT_PARAM(CHECK_ARGS, "WEFT_CHECK_ARGS", INT, "0",
           "1: before each collective, compare counts, types and roots across ranks and name the odd one")
WEFT_PARAM(COLL_BLOCKS, "WEFT_COLL_BLOCKS", INT, "0",
           "blocks of every collective launch (0: the defaults: one, and WEFT_COLL_TEAM_BLOCKS for the mesh algorithms)")
WEFT_PARAM(COLL_PACKET_BLOCKS, "WEFT_COLL_PACKET_BLOCKS", INT, "0",
           "most blocks of a packet collective's launch, each a team with its share of every packet stream "
           "(0, the default: 8 on a GPU, one on the host backend; 1..64; see the README, Packet teams)")
WEFT_PARAM(COLL_PACKET_TEAM_BYTES, "WEFT_COLL_PACKET_TEAM_BYTES", INT, "2048",
           "least bytes of a packet stream per team: a packet launch runs one block per this many bytes of its "
           "largest stream, up to WEFT_COLL_PACKET_BLOCKS (32..1 MiB)")
WEFT_PARAM(COLL_THREADS, "WEFT_COLL_THREADS", INT, "512",
           "GPU backends: threads of each block of a collective launch (64..1024, a multiple of 32)")
WEFT_PARAM(COLL_TEAM_BLOCKS, "WEFT_COLL_TEAM_BLOCKS", INT, "0",
           "GPU: most blocks of a mesh collective's launch, one per 64 KiB of message (each block a team of its own); "
           "0 (default): the device's multiprocessors shared among the ranks on it, at most 64")
WEFT_PARAM(P2P_SLOT_BYTES, "WEFT_P2P_SLOT_BYTES", INT, "262144",
           "send/recv and all-to-all across hosts: bytes of one chunk (a link buffer holds 4; 4 KiB .. 64 MiB)")
WEFT_PARAM(PORT_SIGNAL_STORE, "WEFT_PORT_SIGNAL_STORE", INT, "1",
           "port channels on one host: 1 (default) raises the peer's semaphore with a store queued on the copy "
           "stream where the device can; 0 copies the value from host memory (two copy-engine operations per put)")
WEFT_PARAM(PORT_INLINE_BYTES, "WEFT_PORT_INLINE_BYTES", INT, "8",
           "port channels: puts of at most this many bytes (a multiple of 8, at 8-aligned offsets, from the "
           "handle's source memory) travel inside the FIFO's triggers, 8 bytes each, and land as 64-bit stores "
           "after the channel's earlier writes (on a GPU: stream memory operations, no copy engine); default 8 "
           "(an 8-byte put+signal round trip over IPC: 15.9 us against 24.6 as a copy, one H100); 0: every put is "
           "a copy")
WEFT_PARAM(PORT_BATCH, "WEFT_PORT_BATCH", INT, "1",
           "port channels on one GPU host: 1 (default) queues the stores of one trigger (an inline put's and its "
           "signal's) as one batch of stream memory operations where the driver has it; 0: one call each")
WEFT_PARAM(IPC_COPY_ENGINE, "WEFT_IPC_COPY_ENGINE", INT, "0",
           "tests: 1 makes IPC connections move bytes as on a GPU (copies and stores queued on a stream, flushes "
           "that wait for it) also where the CPU reaches the memory (host backend: a stream's worker thread)")
WEFT_PARAM(PROXY_SPIN_NS, "WEFT_PROXY_SPIN_NS", INT, "-1",
           "how long the proxy polls its FIFO in place after its last trigger before it yields and then sleeps, ns "
           "(-1: 50000 where the process may use 4 cores or more and over twice as many as the ranks on this host, "
           "else 0; 0: yield at once, the old policy)")
WEFT_PARAM(PROXY_STATS, "WEFT_PROXY_STATS", INT, "0",
           "1: each proxy times how it executes triggers (copies, inline puts, signals, flushes) and logs the "
           "counts and mean and largest times when it stops (log level info, subsystem proxy)")
WEFT_PARAM(PROXY_CHECK_WRITES, "WEFT_PROXY_CHECK_WRITES", INT, "0",
           "1 (for chasing a faulting copy): each proxy waits for every write it makes before the next trigger "
           "and logs each one (addresses, registrations, sizes; log level debug, subsystem proxy), so a write "
           "that fails is named by its own error; slow")
WEFT_PARAM(SAME_DEVICE_SCOPE, "WEFT_SAME_DEVICE_SCOPE", INT, "1",
           "1 (default): semaphore signals to ranks on the same GPU are device-scope releases; 0: system scope "
           "always (a system-wide fence per signal)")
WEFT_PARAM(NET_TRANSPORT, "WEFT_NET_TRANSPORT", STR, "auto",
           "network transport between hosts: auto (ib where every rank has an active port passing WEFT_IB_HCA, else ethernet), ethernet or ib")
WEFT_PARAM(FAULT, "WEFT_FAULT", STR, "",
           "tests only: fault points, site:nth[+]:action[=arg],... (src/common/fault.h: sites boot.connect, "
           "boot.send, boot.recv, boot.accept, proxy.request, proxy.completion, net.send, net.recv, net.sideband, "
           "coll.launch, coll.wait, reg.serve, device.lost; actions kill, stop, close, reset, eintr, short, delay[=ms], errno[=NAME])")
WEFT_PARAM(TOPO_FILE, "WEFT_TOPO_FILE", STR, "",
           "hwloc XML file to take the topology from instead of probing this machine")
WEFT_PARAM(REG_MIN_BYTES, "WEFT_REG_MIN_BYTES", INT, "-1",
           "collectives of at least this many bytes register their unregistered buffers on first use "
           "(WEFT_REG_CACHE; ncclMemAlloc memory always) so that they can go zero-copy (-1: 1 MiB on GPU "
           "backends and for execution plans, every size for the host backend's built-in collectives)")
WEFT_PARAM(REG_WAIT_MS, "WEFT_REG_WAIT_MS", INT, "100",
           "how long a call that registers a buffer (the cache's first use, weft_comm_register) waits for the "
           "peers to map it; past that it goes on staged and the registration is used once they have")
WEFT_PARAM(REG_CACHE, "WEFT_REG_CACHE", INT, "1",
           "1: buffers of such collectives that are not registered are registered on first use, cached by "
           "address range and checked against their allocation's identity before each use; 0: they are staged")
WEFT_PARAM(EXEC_ZERO_COPY, "WEFT_EXEC_ZERO_COPY", INT, "1",
           "1: the executor runs a plan's kernel on the caller's buffers where the plan admits it (no port "
           "channels nor a switch channel over them) and, where peers reach them, every rank's are in windows or "
           "registered (agreed per call in the kernel; on GPU backends only with 2, not yet measured on a GPU); 0: "
           "it copies them into the plan's buffers and back")
WEFT_PARAM(EXEC_TRACE, "WEFT_EXEC_TRACE", INT, "0",
           "1: the executor stamps the device clock before each top-level op of a plan's thread blocks "
           "(weft_plan_trace; weft-perf --plan prints the last execution's ops); set before a plan first runs")
WEFT_PARAM(EXEC_WIDE, "WEFT_EXEC_WIDE", INT, "-1",
           "blocks that run each thread block of a plan, each a slice of its every chunk, its signals and waits "
           "once, at most as many as the GPU's multiprocessors shared among the ranks on it allow (-1: 1, for "
           "now); set before a plan first runs")
WEFT_PARAM(EXEC_FIT_THREADS, "WEFT_EXEC_FIT_THREADS", INT, "1",
           "1: the executor launches as many threads per block as a message's largest op per block can use "
           "(at least 64, at most the plan's num_threads_per_block); 0: always the plan's num_threads_per_block")

/* Set by launchers and other runtimes, read where they mean something
 * here; launchers' rank and size are read when a communicator starts
 * (weft_param_env_now), first pair set wins. */
WEFT_PARAM(RANK_WEFT, "WEFT_RANK", STR, "", "launcher: this rank (with WEFT_NRANKS)")
WEFT_PARAM(NRANKS_WEFT, "WEFT_NRANKS", STR, "", "launcher: the job's ranks (with WEFT_RANK)")
WEFT_PARAM(RANK_TORCH, "RANK", STR, "", "launcher (torchrun): this rank (with WORLD_SIZE)")
WEFT_PARAM(NRANKS_TORCH, "WORLD_SIZE", STR, "", "launcher (torchrun): the job's ranks")
WEFT_PARAM(RANK_OMPI, "OMPI_COMM_WORLD_RANK", STR, "", "launcher (Open MPI): this rank")
WEFT_PARAM(NRANKS_OMPI, "OMPI_COMM_WORLD_SIZE", STR, "", "launcher (Open MPI): the job's ranks")
WEFT_PARAM(RANK_PMI, "PMI_RANK", STR, "", "launcher (MPICH, PMI): this rank")
WEFT_PARAM(NRANKS_PMI, "PMI_SIZE", STR, "", "launcher (MPICH, PMI): the job's ranks")
WEFT_PARAM(RANK_PMIX, "PMIX_RANK", STR, "", "launcher (PMIx): this rank")
WEFT_PARAM(NRANKS_PMIX, "PMIX_SIZE", STR, "", "launcher (PMIx): the job's ranks")
WEFT_PARAM(RANK_SLURM, "SLURM_PROCID", STR, "", "launcher (Slurm): this rank")
WEFT_PARAM(NRANKS_SLURM, "SLURM_NTASKS", STR, "", "launcher (Slurm): the job's ranks")
/* NCCL's own variables stand in for weft's where those are unset
 * (param.c, stand_ins): programs written for NCCL set them. */
WEFT_PARAM(NCCL_DEBUG, "NCCL_DEBUG", STR, "",
           "NCCL's log level, WEFT_LOG_LEVEL where that is unset (VERSION and WARN: warn, INFO: info, ABORT: error, "
           "TRACE: trace)")
WEFT_PARAM(NCCL_DEBUG_FILE, "NCCL_DEBUG_FILE", STR, "", "NCCL's log file, WEFT_LOG_FILE where that is unset")
WEFT_PARAM(NCCL_SOCKET_IFNAME, "NCCL_SOCKET_IFNAME", STR, "",
           "NCCL's interfaces, WEFT_SOCKET_IFNAME where that is unset")
WEFT_PARAM(NCCL_SOCKET_FAMILY, "NCCL_SOCKET_FAMILY", STR, "",
           "NCCL's address family, WEFT_SOCKET_FAMILY where that is unset")
WEFT_PARAM(NCCL_NVLS_ENABLE, "NCCL_NVLS_ENABLE", STR, "",
           "NCCL's switch: 0 keeps the switch channel off whatever WEFT_NVLS_ENABLE says")
WEFT_PARAM(XDG_RUNTIME_DIR, "XDG_RUNTIME_DIR", STR, "",
           "the user's runtime directory: where per-job sockets and the local secret go unless WEFT_IPC_DIR is set")

#ifdef WEFT_PARAM_RANGE
WEFT_PARAM_RANGE(INIT_TIMEOUT_MS, 1, 86400000, NUM)
WEFT_PARAM_RANGE(BOOTSTRAP_TIMEOUT_MS, 1, 86400000, NUM)
WEFT_PARAM_RANGE(HANDSHAKE_TIMEOUT_MS, 1, 3600000, NUM)
WEFT_PARAM_RANGE(BOOTSTRAP_MAX_PENDING, 1, 65536, NUM)
WEFT_PARAM_RANGE(BOOTSTRAP_MAX_MSG, 4096, 1L << 30, SIZE)
WEFT_PARAM_RANGE(TRUST_LOCAL, 0, 1, NUM)
WEFT_PARAM_RANGE(PEER_LOSS_GRACE_MS, 0, 3600000, NUM)
WEFT_PARAM_RANGE(HOST_MAX_BLOCKS, 1, 1024, NUM)
WEFT_PARAM_RANGE(HOST_SPIN_NS, -1, 1000000000, NUM)
WEFT_PARAM_RANGE(NVLS_ENABLE, 0, 1, NUM)
WEFT_PARAM_RANGE(DEVICE_TIMEOUT_MS, 1, 86400000, NUM)
WEFT_PARAM_RANGE(COLL_SCRATCH_BYTES, 4096, 1L << 30, SIZE)
WEFT_PARAM_RANGE(COLL_PACKET_MAX_BYTES, 0, 1L << 26, SIZE)
WEFT_PARAM_RANGE(CHECK_ARGS, 0, 1, NUM)
WEFT_PARAM_RANGE(COLL_BLOCKS, 0, 1024, NUM)
WEFT_PARAM_RANGE(COLL_PACKET_BLOCKS, 0, 64, NUM)
WEFT_PARAM_RANGE(COLL_PACKET_TEAM_BYTES, 32, 1L << 20, SIZE)
WEFT_PARAM_RANGE(COLL_TEAM_BLOCKS, 0, 1024, NUM)
WEFT_PARAM_RANGE(COLL_THREADS, 64, 1024, NUM)
WEFT_PARAM_RANGE(P2P_SLOT_BYTES, 4096, 1L << 26, SIZE)
WEFT_PARAM_RANGE(PORT_SIGNAL_STORE, 0, 1, NUM)
WEFT_PARAM_RANGE(PORT_INLINE_BYTES, 0, 256, NUM)
WEFT_PARAM_RANGE(PORT_BATCH, 0, 1, NUM)
WEFT_PARAM_RANGE(IPC_COPY_ENGINE, 0, 1, NUM)
WEFT_PARAM_RANGE(PROXY_SPIN_NS, -1, 1000000000, NUM)
WEFT_PARAM_RANGE(PROXY_STATS, 0, 1, NUM)
WEFT_PARAM_RANGE(PROXY_CHECK_WRITES, 0, 1, NUM)
WEFT_PARAM_RANGE(SAME_DEVICE_SCOPE, 0, 1, NUM)
WEFT_PARAM_RANGE(REG_MIN_BYTES, -1, 1L << 40, SIZE)
WEFT_PARAM_RANGE(REG_CACHE, 0, 1, NUM)
WEFT_PARAM_RANGE(REG_WAIT_MS, 0, 600000, NUM)
WEFT_PARAM_RANGE(EXEC_ZERO_COPY, 0, 2, NUM)
WEFT_PARAM_RANGE(EXEC_FIT_THREADS, 0, 1, NUM)
WEFT_PARAM_RANGE(EXEC_WIDE, -1, 16, NUM)
WEFT_PARAM_RANGE(EXEC_TRACE, 0, 1, NUM)
#endif
