"""Which kernel does a call run? Record the ATen operators PyTorch dispatches, without the profiler
(its C++ log lines would land in a notebook's output)."""

from __future__ import annotations

from collections.abc import Callable

from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["aten_ops", "sdpa_path"]


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def aten_ops(fn: Callable[[], object]) -> list[str]:
    """Names of the ATen operators ``fn()`` runs, in order (after autograd, before the kernels)."""
    rec = _Recorder()
    with rec:
        fn()
    return rec.ops


def sdpa_path(fn: Callable[[], object]) -> str:
    """``"fused (flash, CPU)"`` when ``fn()`` reaches PyTorch's fused CPU attention kernel,
    ``"fused (<name>)"`` for another fused kernel, else ``"math (matmul + softmax)"``."""
    ops = aten_ops(fn)
    for op in ops:
        if op == "_scaled_dot_product_flash_attention_for_cpu":
            return "fused (flash, CPU)"
        if op.startswith("_scaled_dot_product_") and op != "_scaled_dot_product_attention_math":
            return f"fused ({op})"
    return "math (matmul + softmax)"
