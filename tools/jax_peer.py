"""The JAX side of a benchmark's same-run comparison (benchmarks/jax_peer.h holds the other).

A script imports this before JAX, builds its workloads (each a function of no arguments
whose result is blocked on), and calls main(workloads):
- with --serve, a C++ benchmark drives it: it prints `info KEY VALUE` lines and `ready`
  once every workload has run once (compiling it), then for each workload named on a line
  of stdin runs it once and prints the seconds, timed around the call and
  jax.block_until_ready, as the C++ side times parax; it ends at the end of its input;
- otherwise it prints each workload's best of --reps=N (after the same warm-up) on its own.
With --serve and no importable JAX it prints `unavailable WHY` and exits, so the benchmark
says plainly that there is no comparison.

JAX:CPU runs on one CPU device (XLA_FLAGS as set here unless the caller sets them) and XLA
spreads each operation over its own thread pool, one thread per core.
"""
import os
import sys
import time

SERVE = "--serve" in sys.argv
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

try:
    import jax
    import jaxlib
except ImportError as e:
    if not SERVE:
        raise
    print(f"unavailable {sys.executable}: {e}", flush=True)
    sys.exit(0)


def _run_once(f):
    t0 = time.perf_counter()
    jax.block_until_ready(f())
    return time.perf_counter() - t0


def _serve(workloads):
    print(f"info jax_version {jax.__version__}")
    print(f"info jaxlib_version {jaxlib.__version__}")
    print(f"info devices {len(jax.devices('cpu'))}")
    print(f"info threads {len(os.sched_getaffinity(0))}")
    print("ready", flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name in workloads:
            print(f"{_run_once(workloads[name]):.9f}", flush=True)
        else:
            print(f"error unknown workload {name!r}; known: {' '.join(workloads)}", flush=True)


def main(workloads, default_reps=10):
    """Warms up each workload (compile and one run), then serves or times them."""
    for f in workloads.values():
        jax.block_until_ready(f())
    if SERVE:
        _serve(workloads)
        return
    reps = default_reps
    for arg in sys.argv[1:]:
        if arg.startswith("--reps="):
            reps = max(1, int(arg.split("=", 1)[1]))
    print(f"JAX {jax.__version__} (jaxlib {jaxlib.__version__}), "
          f"{len(jax.devices('cpu'))} CPU device, {len(os.sched_getaffinity(0))} cores, "
          f"best of {reps}:")
    for name, f in workloads.items():
        best = min(_run_once(f) for _ in range(reps))
        print(f"{name} {best * 1e3:.3f} ms")
