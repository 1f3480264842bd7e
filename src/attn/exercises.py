"""Checkers for the chapters' coding exercises: pass your function, get a clear verdict.

Each ``check_*`` function runs the reader's implementation on seeded inputs (several shapes, the
edge cases the chapter discusses) and compares it with the package's tested implementation or
with PyTorch's, using ``torch.testing.assert_close``. It never raises because the answer is wrong:
it returns a :class:`Verdict` that reads as text in a terminal and as a small table in a notebook,
and is true only when every case passes::

    def my_attention(q, k, v, mask=None):
        ...
    attn.exercises.check_attention(my_attention)   # Verdict: 5/5 cases pass
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch
import torch.nn.functional as F

from attn import masks
from attn.positional import sinusoidal_table

__all__ = [
    "Verdict",
    "check_attention",
    "check_causal_mask",
    "check_padding_mask",
    "check_sinusoidal_table",
    "check_split_heads",
]


@dataclass
class Verdict:
    """The result of one checker: one ``(case, passed, detail)`` row per case tried."""

    exercise: str
    cases: list[tuple[str, bool, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.cases) and all(ok for _, ok, _ in self.cases)

    @property
    def summary(self) -> str:
        passed = sum(ok for _, ok, _ in self.cases)
        word = "correct" if self else "not yet"
        return f"{self.exercise}: {word} ({passed}/{len(self.cases)} cases pass)"

    def __repr__(self) -> str:
        lines = [self.summary]
        for case, ok, detail in self.cases:
            lines.append(f"  {'ok  ' if ok else 'FAIL'} {case}" + ("" if ok else f": {detail}"))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{'&#10003;' if ok else '&#10007;'}</td><td>{html.escape(case)}</td>"
            f"<td>{'' if ok else html.escape(detail)}</td></tr>"
            for case, ok, detail in self.cases
        )
        return f"<p><b>{html.escape(self.summary)}</b></p><table>{rows}</table>"


def _run(verdict: Verdict, case: str, answer: Callable[[], object], expected: torch.Tensor, **tol) -> None:
    """Call ``answer()``, compare with ``expected``, record the outcome (errors become details)."""
    try:
        got = answer()
    except Exception as e:  # the reader's code failing is a finding, not a crash of the checker
        verdict.cases.append((case, False, f"raised {type(e).__name__}: {e}"))
        return
    if isinstance(got, tuple):  # (output, weights) is a common return: check the output
        got = got[0]
    if not isinstance(got, torch.Tensor):
        verdict.cases.append((case, False, f"returned {type(got).__name__}, expected a tensor"))
        return
    if got.shape != expected.shape:
        verdict.cases.append((case, False, f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"))
        return
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        ok = got.dtype == expected.dtype and torch.equal(got, expected)
        detail = "" if ok else (f"dtype {got.dtype}, expected {expected.dtype}" if got.dtype != expected.dtype
                                else f"{int((got != expected).sum())} entries differ")
        verdict.cases.append((case, ok, detail))
        return
    try:
        torch.testing.assert_close(got.to(expected.dtype), expected, **tol)
        verdict.cases.append((case, True, ""))
    except AssertionError as e:
        first = str(e).strip().splitlines()
        verdict.cases.append((case, False, " ".join(first[:3])))


def check_attention(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(q, k, v, mask=None)``: scaled dot-product attention with a boolean mask.

    Shape: ``q`` ``(..., L, E)``, ``k`` ``(..., S, E)``, ``v`` ``(..., S, Ev)``, ``mask`` boolean
    broadcasting to ``(..., L, S)`` (``True`` = may attend); the output is ``(..., L, Ev)``. A query
    whose keys are all masked must give zeros, not NaN. ``fn`` may also return ``(output, weights)``.
    """
    v_ = Verdict("scaled dot-product attention")
    g = torch.Generator().manual_seed(0)
    tol = dict(rtol=1e-4, atol=1e-5)
    for L, S, E, Ev in [(3, 3, 4, 4), (2, 5, 8, 3)]:
        q, k, v = (torch.randn(2, n, d, generator=g) for n, d in [(L, E), (S, E), (S, Ev)])
        _run(v_, f"no mask, L={L}, S={S}, E={E}, Ev={Ev}", partial(fn, q, k, v),
             F.scaled_dot_product_attention(q, k, v), **tol)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    _run(v_, "batch and heads (B, H, L, E)", lambda: fn(q, k, v), F.scaled_dot_product_attention(q, k, v), **tol)
    q, k, v = (torch.randn(1, 5, 4, generator=g) for _ in range(3))
    causal = masks.causal(5)
    _run(v_, "causal boolean mask", lambda: fn(q, k, v, mask=causal),
         F.scaled_dot_product_attention(q, k, v, attn_mask=causal), **tol)
    rows = torch.tensor([[True, True, False, False, False], [False] * 5, [True] * 5, [True] * 5, [True] * 5])
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=rows)
    expected[:, 1] = 0.0  # a fully masked row gives zeros
    _run(v_, "a fully masked row gives zeros, not NaN", lambda: fn(q, k, v, mask=rows), expected, **tol)
    return v_


def check_causal_mask(fn: Callable[[int], torch.Tensor]) -> Verdict:
    """Check ``fn(n)``: the ``(n, n)`` boolean causal mask, ``True`` where query ``i`` may see key ``j <= i``."""
    v_ = Verdict("causal mask")
    for n in (1, 4, 7):
        _run(v_, f"n={n}", lambda n=n: fn(n), masks.causal(n))
    return v_


def check_padding_mask(fn: Callable[[list[int], int], torch.Tensor]) -> Verdict:
    """Check ``fn(lengths, S)``: a ``(B, S)`` boolean mask, ``True`` on each sequence's real tokens."""
    v_ = Verdict("padding mask")
    for lengths, S in [([3, 1], 4), ([5, 5, 2], 5), ([0, 2], 3)]:
        expected = masks.padding(lengths, S).reshape(len(lengths), S)
        _run(v_, f"lengths={lengths}, S={S}", lambda a=lengths, b=S: fn(a, b), expected)
    return v_


def check_sinusoidal_table(fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Check ``fn(max_len, d_model)``: the ``(max_len, d_model)`` sinusoidal table, sin on even
    columns and cos on odd ones, frequencies ``1 / 10000^(2i / d_model)``."""
    v_ = Verdict("sinusoidal positional table")
    for max_len, d in [(4, 2), (16, 8), (50, 64)]:
        _run(v_, f"max_len={max_len}, d_model={d}", lambda a=max_len, b=d: fn(a, b),
             sinusoidal_table(max_len, d), rtol=1e-4, atol=1e-5)
    return v_


def check_split_heads(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Check ``fn(x, num_heads)``: ``(B, L, D)`` to ``(B, H, L, E)`` with ``E = D / H``, head ``h``
    taking columns ``h*E .. (h+1)*E - 1`` (a ``view`` then a ``transpose``, not a bare reshape)."""
    v_ = Verdict("split heads")
    g = torch.Generator().manual_seed(1)
    for B, L, D, H in [(1, 3, 4, 2), (2, 5, 12, 3), (2, 4, 8, 8)]:
        x = torch.randn(B, L, D, generator=g)
        expected = x.view(B, L, H, D // H).transpose(1, 2)
        _run(v_, f"B={B}, L={L}, D={D}, H={H}", lambda x=x, H=H: fn(x, H), expected, rtol=0, atol=0)
    return v_
