"""Measuring the machine: how long a statement takes, by ``torch.utils.benchmark``.

Times depend on the machine, its load and its thread count: a chapter shows them in a table marked
"measured on the build machine", written with their unit (``f"{t * 1e3:.1f} ms"``), and asserts
only a large effect (README, "Writing a chapter").
"""

from __future__ import annotations

import logging

__all__ = ["seconds"]


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
