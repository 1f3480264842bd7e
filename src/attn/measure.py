"""Measuring a computation: how long it takes (:func:`seconds`, :func:`compare` side by side, both on
``torch.utils.benchmark``; :func:`stopwatch` for work done once), how far it raises the process's
peak memory (:func:`peak_memory_growth`, the operating system's high-water mark), how many
floating-point operations it does (:func:`flops`, ``torch.utils.flop_counter``), which ATen
operators it runs (:func:`operators`, a ``TorchDispatchMode``; from them :func:`matrix_products`
counts matrix products and :func:`sdpa_path` names the attention kernel), and how many elements a
module receives while it runs (:func:`input_elements`). The benchmarks, the tests and the chapters
measure with these, and only these.

Operator, FLOP and element counts are facts of PyTorch, the same on every machine (for one torch
version); times and memory are machine measurements.

Times depend on the machine, its load and its thread count: a chapter shows them in a table marked
"measured on the build machine", written with their unit (``f"{t * 1e3:.1f} ms"``), and asserts
only a large effect (README, "Writing a chapter").
"""
from __future__ import annotations

import logging
import math
import os
import statistics
import time
import warnings
from collections.abc import Callable, Mapping

import torch

from attn import _checks, _moved

__all__ = ["CLOCKS", "MATRIX_PRODUCTS", "can_measure_memory", "compare", "flops", "input_elements", "matrix_products",
           "operators", "peak_memory_growth", "sdpa_path", "seconds", "stopwatch"]

#: The clocks :func:`seconds` and :func:`compare` read: wall time, or this process's processor time
#: (which other programs on the machine do not inflate; with one thread, the time on an idle core).
CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


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


def _measurement(stmt: str | Callable[[], object], names: dict, min_run_time: float, clock: str,
                 threads: int | None = None):
    if callable(stmt):
        stmt, names = "_fn()", {**names, "_fn": stmt}
    if not isinstance(stmt, str) or not stmt.strip():
        raise ValueError(f"stmt must be a Python statement as text or a function of no arguments, got {stmt!r}")
    _checks.number("min_run_time", min_run_time, 0, what=" seconds (0: one warm-up and one timed run)")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    if threads is not None:
        _checks.positive_int("threads", threads)
    # The Timer sets torch's thread count for the measurement and restores it afterwards.
    timer = _timer()(stmt, globals=names, timer=CLOCKS[clock], num_threads=threads or torch.get_num_threads())
    # blocked_autorange's first run sizes the blocks and warms up; with a vanishing min_run_time one
    # timed run follows: what a call that takes seconds needs.
    return timer.blocked_autorange(min_run_time=min_run_time or 1e-9)


def seconds(stmt: str | Callable[[], object], *, min_run_time: float = 0.2, clock: str = "wall",
            threads: int | None = None, **names) -> float:
    """Median seconds of one run of ``stmt`` (Python source with ``names`` as its globals, or a
    function of no arguments).

    ``torch.utils.benchmark.Timer.blocked_autorange`` warms up, picks a number of runs per block
    and repeats blocks for at least ``min_run_time`` seconds (``0``: one warm-up run and one timed
    run, for a call that takes seconds), on ``threads`` threads (default: torch's current count).
    ``clock`` is ``"wall"`` or ``"process"`` (see ``CLOCKS``); ``clock="process"`` with
    ``threads=1`` is the time on an idle core, which other programs on the machine barely change.

    Example: ``seconds("f(x)", f=layer, x=x)``, or ``seconds(lambda: layer(x))``.
    """
    return _measurement(stmt, names, min_run_time, clock, threads).median


def compare(calls: Mapping[str, str | Callable[[], object]], *, rounds: int = 3, min_run_time: float = 0.05,
            clock: str = "wall", threads: int | None = None,
            summary: Callable[[list[float]], float] = statistics.median, **names) -> dict[str, float]:
    """Seconds of each call, measured side by side: ``rounds`` rounds, each timing every call once
    with :func:`seconds` (the order reversed every other round, so that no call always runs first),
    and the ``summary`` (median) of each call's rounds. A change in the machine's load then hits
    every call alike, and their ratios are what a chapter or a benchmark can report. ``clock`` and
    ``threads`` as in :func:`seconds`.

    Example: ``compare({"cache": lambda: lm.generate(p, 64), "none": lambda: lm.generate(p, 64,
    use_cache=False)})`` gives ``{"cache": ..., "none": ...}``.
    """
    if not calls:
        raise ValueError("calls must name at least one call, got none")
    _checks.positive_int("rounds", rounds)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds):
        for name in list(calls) if r % 2 == 0 else list(calls)[::-1]:
            samples[name].append(_measurement(calls[name], names, min_run_time, clock, threads).median)
    return {name: summary(s) for name, s in samples.items()}


class stopwatch:  # noqa: N801  a context manager, named as a function
    """Seconds a ``with`` block took, for work done once whose result is kept (a training run),
    where :func:`seconds` would have to repeat it. ``clock`` as in :func:`seconds`.

    Example: ``with attn.measure.stopwatch() as took: train(...)`` then ``took.seconds``.
    """

    def __init__(self, clock: str = "wall"):
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
        self._clock = CLOCKS[clock]
        self.seconds = math.nan  #: the block's time, set when it ends (NaN while it runs)

    def __enter__(self) -> stopwatch:
        self._start = self._clock()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = self._clock() - self._start


def flops(fn: Callable[..., object], *args, **kwargs) -> int:
    """Floating-point operations of ``fn(*args, **kwargs)`` as ``torch.utils.flop_counter`` counts
    them: a multiply-add counts two, and only operators with a registered formula count (matrix
    products and convolutions; in torch 2.13 not the fused CPU attention kernel, so a fused call
    shows only its projections). Call it inside ``torch.no_grad()`` to count the forward pass alone.

    Example: ``flops(torch.mm, a, b) == 2 * m * n * k`` for ``a`` ``(m, k)`` and ``b`` ``(k, n)``.
    """
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


def operators(fn: Callable[..., object], *args, **kwargs) -> list[str]:
    """Names of the ATen operators ``fn(*args, **kwargs)`` runs, in order, as the dispatcher sees
    them after autograd and before the kernels: ``"bmm"``, ``"_softmax"``,
    ``"_scaled_dot_product_flash_attention_for_cpu"`` (the operator's name without ``aten.`` and
    without its overload). Unlike the profiler, it writes no log lines into a notebook's output.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Recorder() as recorder:
        fn(*args, **kwargs)
    return recorder.names


def sdpa_path(fn: Callable[[], object]) -> str:
    """Which kernel ``fn()`` reaches, named from its :func:`operators`: ``"fused (flash, CPU)"`` for
    PyTorch's fused CPU attention kernel, ``"fused (<name>)"`` for another fused kernel, else
    ``"math (matmul + softmax)"``."""
    for op in operators(fn):
        if op == "_scaled_dot_product_flash_attention_for_cpu":
            return "fused (flash, CPU)"
        if op.startswith("_scaled_dot_product_") and op != "_scaled_dot_product_attention_math":
            return f"fused ({op})"
    return "math (matmul + softmax)"


def can_measure_memory() -> bool:
    """Whether :func:`peak_memory_growth` works here (Linux: ``/proc`` and ``fork``)."""
    return os.path.exists("/proc/self/status") and hasattr(os, "fork")


def _resident_mib() -> dict[str, float]:
    """This process's resident memory now, in MiB: ``VmRSS`` (all of it), ``RssFile`` (pages of mapped
    files, such as the libraries' code) and ``RssAnon`` (memory allocated; both 0 where the kernel does
    not report them, before Linux 4.5)."""
    got = {"VmRSS": 0.0, "RssFile": 0.0, "RssAnon": 0.0}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in got:
                got[key] = int(value.split()[0]) / 1024  # kB
    return got


def peak_memory_growth(run: Callable[[], object], *, timeout: float = 300.0) -> float:
    """How far the peak resident memory rises while ``run()`` executes, in MiB.

    PyTorch reports the CPU's memory only through its profiler, and ``tracemalloc`` does not see
    its allocations, so this asks the operating system: a forked child, whose high-water mark of
    resident memory starts at its current size, runs ``run()`` once and reports how far the mark
    rose (``resource.getrusage``), less what the run added of file-backed pages: a forked child maps
    the libraries' code afresh as it runs it (tens of MiB on some kernels for one first PyTorch call,
    which maps whole large pages of ``libtorch``), and that is not memory the computation allocates
    (``RssFile`` of ``/proc/self/status``; file pages stay mapped, so their growth at the end bounds
    their growth at the peak). The figure includes a few hundred KiB of the child's first touches of
    memory. Under memory pressure the kernel may evict file pages while the run allocates, so the
    resident size, and its mark, need not rise: the figure is then at least the anonymous memory
    (``RssAnon``) the run still holds when it returns, what it returns included (kept until then). The child computes on one thread: OpenMP's thread pool does not survive ``fork``, and a
    child that used it would hang. Linux only (see :func:`can_measure_memory`).

    Raises:
        RuntimeError: without ``/proc`` and ``fork``, or if the child fails or does not report
            within ``timeout`` seconds (it is then killed).
    """
    if not can_measure_memory():
        raise RuntimeError("peak_memory_growth needs Linux (/proc and fork)")
    import resource  # Unix only: imported here, so that attn.measure imports on every platform
    import select
    import signal

    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12 warns that fork() in a threaded process may deadlock the child; the child here
        # runs only run() and exits, and the warning is not a result of the measurement.
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its peak starts at its current size
        try:
            torch.set_num_threads(1)
            before = _resident_mib()
            result = run()  # kept while the memory is read
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
            after = _resident_mib()
            grew = peak - before["VmRSS"] - (after["RssFile"] - before["RssFile"])
            # evicted file pages can hide the rise of the mark; what is still allocated is a lower bound
            grew = max(grew, after["RssAnon"] - before["RssAnon"])
            del result
            os.write(write, repr(max(0.0, grew)).encode())  # rounding of the kernel's counts aside, never below 0
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


#: ATen's matrix-product operators; a linear layer runs ``addmm`` (or ``mm`` without a bias).
MATRIX_PRODUCTS = frozenset({"mm", "addmm", "bmm", "baddbmm"})


def matrix_products(fn: Callable[..., object], *args, **kwargs) -> int:
    """How many matrix products (:data:`MATRIX_PRODUCTS`) ``fn(*args, **kwargs)`` runs, counted from
    :func:`operators`. A matrix product inside a fused kernel (the CPU attention kernel) is not seen."""
    return sum(name in MATRIX_PRODUCTS for name in operators(fn, *args, **kwargs))


def input_elements(module, fn: Callable[..., object], *args, **kwargs) -> int:
    """How many elements the first input of ``module`` adds up to, over every call of ``module``
    while ``fn(*args, **kwargs)`` runs (a forward pre-hook, removed afterwards). On a language
    model's embedding, that is the number of token positions the model processes."""
    count = 0

    def hook(_module, inputs) -> None:
        nonlocal count
        count += inputs[0].numel()

    handle = module.register_forward_pre_hook(hook)
    try:
        fn(*args, **kwargs)
    finally:
        handle.remove()
    return count


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
