"""Measuring a computation: how long it takes (:func:`seconds`, :func:`compare` side by side, both on
``torch.utils.benchmark``; :func:`stopwatch` for work done once), how far it raises the process's
peak memory (:func:`peak_memory_growth`, the operating system's high-water mark), how many
floating-point operations it does (:func:`flops`, ``torch.utils.flop_counter``) and which ATen
operators it runs (:func:`operators`, a ``TorchDispatchMode``). The benchmarks, the tests and the
chapters measure with these, and only these.

The last two are facts of PyTorch, the same on every machine (for one torch version); the first two
are machine measurements.

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

from attn import _checks

__all__ = ["MATRIX_PRODUCTS", "can_measure_memory", "compare", "flops", "input_elements", "matrix_products", "operators",
           "peak_memory_growth", "seconds", "stopwatch", "decoder_step_flops"]

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
    if not min_run_time >= 0:
        raise ValueError(f"min_run_time must be positive (or 0: one warm-up and one timed run), got {min_run_time!r}")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    if threads is not None:
        _checks.positive_int("threads", threads)
    import torch

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
    if not (isinstance(rounds, int) and rounds >= 1):
        raise ValueError(f"rounds must be a positive int, got {rounds!r}")
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


def can_measure_memory() -> bool:
    """Whether :func:`peak_memory_growth` works here (Linux: ``/proc`` and ``fork``)."""
    return os.path.exists("/proc/self/status") and hasattr(os, "fork")


def _resident_mib() -> dict[str, float]:
    """This process's resident memory now, in MiB: ``VmRSS`` (all of it) and ``RssFile`` (pages of
    mapped files, such as the libraries' code; 0 where the kernel does not report it, before Linux 4.5)."""
    got = {"VmRSS": 0.0, "RssFile": 0.0}
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
            before = _resident_mib()
            run()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
            after = _resident_mib()
            grew = peak - before["VmRSS"] - (after["RssFile"] - before["RssFile"])
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


# --- multi-head and causal chapters: counting, not timing ------------------------------------------
# Two counters the chapters used to define inline: how many matrix products a call runs (the fused
# multi-head layer against a loop over heads) and how many elements a module receives while a call
# runs (the tokens that enter a language model with and without a KV cache).

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


# --- moved from the cross / positional chapters

def decoder_step_flops(B: int, S: int, D: int, t: int, *, reproject: bool) -> int:
    """Floating-point operations (a multiply-add counts 2) of one decoder layer
    (d_ff = 4D) for one new token of each of ``B`` sequences, with ``t`` earlier tokens
    in the self-attention cache and a memory of ``S`` positions. ``reproject=True`` adds
    computing the memory's keys and values again (``K = M W_K``, ``V = M W_V``, each
    ``(B, S, D)``), which a static cross-attention cache saves. Matrix products only, as
    :func:`flops` counts them."""
    for name, value in (("B", B), ("S", S), ("D", D)):
        _checks.positive_int(name, value)
    _checks.non_negative_int("t", t, " (earlier tokens in the cache)")
    flops = 2 * B * 4 * D * D  # self-attention: W_Q, W_K, W_V and W_O for the new token
    flops += 2 * B * 2 * (t + 1) * D  # its scores and weighted sum over t + 1 keys
    flops += 2 * B * 2 * D * D  # cross-attention: W_Q and W_O for the new token
    flops += 2 * B * 2 * S * D  # cross-attention scores and weighted sum over S keys
    flops += 2 * B * 2 * D * 4 * D  # feed-forward D -> 4D -> D
    if reproject:
        flops += 2 * B * 2 * S * D * D  # K = M W_K and V = M W_V, again
    return flops


# --- moved from the causal / why chapters ------------------------------------------------------
# The meters of book/why_attention.ipynb: time per layer and length, sequential depth of a
# computation, gradient by distance, reach of a convolution stack. Tests: tests/test_why_chapter.py.

__all__ += ["autograd_depth", "gradient_by_distance", "layer_times", "layers_to_reach"]


def layer_times(layers: Mapping[str, Callable], lengths, *, batch: int, width: int,
                min_run_time: float = 0.02, clock: str = "wall") -> dict[tuple[str, int, str], float]:
    """Median seconds of each sequence layer, forward (``"fwd"``) and forward plus backward
    (``"fwd+bwd"``), on a random batch ``(batch, n, width)`` for each length ``n``, timed with
    :func:`seconds` on ``clock`` (``"process"`` on one thread: what other programs barely change).
    A layer returns ``(output, extra)``, as ``nn.LSTM`` and the attention modules of ``attn`` do.
    Returns ``{(name, n, kind): seconds}``."""
    import torch

    times = {}
    for n in lengths:
        x = torch.randn(batch, n, width, requires_grad=True)  # (B, n, D)
        for name, layer in layers.items():
            f = lambda x, layer=layer: layer(x)[0]  # noqa: E731  (B, n, D)
            for kind, stmt in (("fwd", "f(x)"), ("fwd+bwd", "f(x).sum().backward()")):
                times[name, n, kind] = seconds(stmt, f=f, x=x, min_run_time=min_run_time, clock=clock)
    return times


def autograd_depth(out) -> int:
    """The longest chain of autograd nodes from the tensor ``out`` back to a leaf: the number of
    operations that must run one after another to compute it, whatever the hardware (iterative,
    no recursion limit). A fused operation counts once."""
    depth, stack = {}, [(out.grad_fn, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depth:
            continue
        parents = [p for p, _ in node.next_functions if p is not None]
        if expanded:
            depth[node] = 1 + max((depth[p] for p in parents), default=0)
        else:
            stack.append((node, True))
            stack.extend((p, False) for p in parents if p not in depth)
    return depth[out.grad_fn]


def gradient_by_distance(make_layer: Callable, length: int, width: int, seed: int):
    """How strongly the last output of a fresh layer depends on each input, at initialisation.

    Seeds torch with ``seed``, builds ``make_layer()`` in float64 (recurrent gradients get too small
    for float32), and returns the norm of the gradient of ``u . y_last`` (``u`` a random direction)
    with respect to each input, ``(length,)``: entry ``k`` is the input ``k`` positions before the
    last one. The layer maps ``(1, length, width)`` to ``(output, extra)``.
    """
    import torch

    torch.manual_seed(seed)
    layer = make_layer().double()
    x = torch.randn(1, length, width, dtype=torch.float64, requires_grad=True)  # (1, N, D)
    u = torch.randn(width, dtype=torch.float64)
    (layer(x)[0][0, -1] @ u).backward()
    return x.grad[0].norm(dim=-1).flip(0)  # (N,): entry k = distance k from the last position


def layers_to_reach(distance: int, kernel: int, dilated: bool, width: int = 4) -> int:
    """How many causal ``Conv1d`` layers (kernel ``kernel``, dilation ``kernel ** depth`` when
    ``dilated``, else 1; tanh between) must be stacked before the last output depends on the input
    ``distance`` positions back, measured: the first depth at which its gradient is not exactly 0."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    x = torch.randn(1, width, distance + 1, requires_grad=True)  # (1, channels, n)
    h, depth = x, 0
    while True:
        dilation = kernel**depth if dilated else 1
        conv = nn.Conv1d(width, width, kernel, dilation=dilation)
        h = torch.tanh(conv(F.pad(h, ((kernel - 1) * dilation, 0))))  # causal padding keeps the length
        depth += 1
        (g,) = torch.autograd.grad(h[0, :, -1].sum(), x, retain_graph=True)
        if g[0, :, 0].abs().sum() > 0:  # the first input now reaches the last output
            return depth
