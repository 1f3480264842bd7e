"""Measuring the machine: how long a statement takes (``torch.utils.benchmark``), and how far a
computation raises the process's peak memory (the operating system's high-water mark).

Times depend on the machine, its load and its thread count: a chapter shows them in a table marked
"measured on the build machine", written with their unit (``f"{t * 1e3:.1f} ms"``), and asserts
only a large effect (README, "Writing a chapter").
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable

__all__ = ["can_measure_memory", "peak_memory_growth", "seconds"]


def _timer():
    # torch.utils.benchmark imports torch.utils.cpp_extension, which logs "No CUDA runtime is found"
    # at import with a CUDA build of torch on a machine without a GPU: not a result, keep it quiet.
    log = logging.getLogger("torch.utils.cpp_extension")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        from torch.utils.benchmark import Timer
    finally:
        log.setLevel(level)
    return Timer


def seconds(stmt: str, *, min_run_time: float = 0.2, **names) -> float:
    """Median seconds of one run of ``stmt`` (Python source), with ``names`` as its globals.

    ``torch.utils.benchmark.Timer.blocked_autorange`` warms up, picks a number of runs per block
    and repeats blocks for at least ``min_run_time`` seconds; its thread count is torch's.

    Example: ``seconds("f(x)", f=layer, x=x)``.
    """
    if not isinstance(stmt, str) or not stmt.strip():
        raise ValueError(f"stmt must be a Python statement as text, got {stmt!r}")
    if not min_run_time > 0:
        raise ValueError(f"min_run_time must be positive, got {min_run_time!r}")
    return _timer()(stmt, globals=names).blocked_autorange(min_run_time=min_run_time).median


def can_measure_memory() -> bool:
    """Whether :func:`peak_memory_growth` works here (Linux: ``/proc`` and ``fork``)."""
    return os.path.exists("/proc/self/statm") and hasattr(os, "fork")


def peak_memory_growth(run: Callable[[], object], *, timeout: float = 300.0) -> float:
    """How far the peak resident memory rises while ``run()`` executes, in MiB.

    PyTorch reports the CPU's memory only through its profiler, and ``tracemalloc`` does not see
    its allocations, so this asks the operating system: a forked child, whose high-water mark of
    resident memory starts at its current size, runs ``run()`` once and reports how far the mark
    rose (``resource.getrusage``). The figure includes a few MiB of the child's first touches of
    memory. The child computes on one thread: OpenMP's thread pool does not survive ``fork``, and a
    child that used it would hang. Linux only (see :func:`can_measure_memory`).

    Raises:
        RuntimeError: without ``/proc`` and ``fork``, or if the child fails or does not report
            within ``timeout`` seconds (it is then killed).
    """
    import resource
    import select
    import signal

    import torch

    if not can_measure_memory():
        raise RuntimeError("peak_memory_growth needs Linux (/proc and fork)")
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12 warns that fork() in a threaded process may deadlock the child; the child here
        # runs only run() and exits, and the warning is not a result of the measurement.
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its peak starts at its current size
        try:
            torch.set_num_threads(1)
            with open("/proc/self/statm") as f:
                before = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
            run()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
            os.write(write, repr(peak - before).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], timeout)
    answer = os.read(read, 64) if ready else b""
    os.close(read)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    if not answer:
        raise RuntimeError(f"the measuring child process failed or did not report within {timeout:g} s")
    return float(answer)
