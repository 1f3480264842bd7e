"""WorkedExampleExplorer: the chapters' small Q/K/V example with numbers the reader edits.

``X`` ``(L, D)`` and ``W_Q``, ``W_K`` ``(D, E)``, ``W_V`` ``(D, Ev)`` live in the synced state; the
front end (``worked_example.js``, with the shared maths of ``_nn.js``) computes ``Q = X W_Q``,
``K = X W_K``, ``V = X W_V``, the scaled scores ``Q Kᵀ / sqrt(E)``, the softmax rows and the
outputs as the reader types, with or without the causal mask. :meth:`WorkedExampleExplorer.result`
is the same computation in Python through :func:`attn.scaled_dot_product_attention`, which the
tests hold the browser's numbers to. The starting state is :func:`attn.book.examples.worked_example`.
"""

from __future__ import annotations

import math

import anywidget
import torch
import traitlets as t

from attn import _checks
from attn.functional import scaled_dot_product_attention
from attn.book.widgets._state import CSS, LIMIT, Lang, as_array, front_end, rounded

__all__ = ["MAX_SIZE", "WorkedExampleExplorer"]

MAX_SIZE = 8  # most tokens, and most columns of any matrix: each entry is a text field


class WorkedExampleExplorer(anywidget.AnyWidget):
    """The worked example of the self-attention chapter, editable: every step updates as one types.

    Args:
        X: token vectors ``(L, D)``; default: :func:`attn.book.examples.worked_example`'s (3 tokens, D = 4).
        W_Q, W_K: ``(D, E)``; W_V: ``(D, Ev)``. Default: the example's.
        tokens: one label per row of ``X`` (default: the example's words, or ``"0"``, ``"1"``, ...).
        is_causal: start with the causal mask on (query ``i`` sees keys ``j <= i``), as
            :func:`attn.scaled_dot_product_attention`'s flag of the same name.

    Shape:
        ``Q``, ``K`` ``(L, E)``, ``V`` ``(L, Ev)``, scores and weights ``(L, L)``, output ``(L, Ev)``.
        Entries are rounded to 4 decimals, each at most ``LIMIT`` in magnitude; ``L``, ``D``, ``E`` and
        ``Ev`` are at most ``MAX_SIZE``.

    Raises:
        ValueError: shapes that do not chain, an entry that is not finite or too large, a token count
            that is not ``L``; the message names the argument and the shapes.
    """

    _esm = front_end("worked_example.js", parts=("_dom.js", "_nn.js"))
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    tokens = t.List(t.Unicode()).tag(sync=True)
    X = t.List(t.List(t.Float())).tag(sync=True)  # (L, D)
    W_Q = t.List(t.List(t.Float())).tag(sync=True)  # (D, E)
    W_K = t.List(t.List(t.Float())).tag(sync=True)  # (D, E)
    W_V = t.List(t.List(t.Float())).tag(sync=True)  # (D, Ev)
    is_causal = t.Bool(False).tag(sync=True)

    def __init__(self, X=None, W_Q=None, W_K=None, W_V=None, *, tokens=None, is_causal: bool = False):
        from attn.book.examples import worked_example

        ex = worked_example()
        given = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}
        mats = {k: ex[k] if v is None else v for k, v in given.items()}
        if tokens is None and X is None:
            tokens = ex["tokens"]
        super().__init__(**_check(mats, tokens), is_causal=_checks.boolean("is_causal", is_causal))

    def update(self, **changes) -> None:
        """Replace any of ``X``, ``W_Q``, ``W_K``, ``W_V``, ``tokens``, ``is_causal`` live (checked together)."""
        unknown = set(changes) - {"X", "W_Q", "W_K", "W_V", "tokens", "is_causal"}
        if unknown:
            raise TypeError(f"update() got unknown names {sorted(unknown)}")
        mats = {k: changes.get(k, getattr(self, k)) for k in ("X", "W_Q", "W_K", "W_V")}
        tokens = changes.get("tokens", self.tokens if len(self.tokens) == len(mats["X"]) else None)
        state = _check(mats, tokens)
        if "is_causal" in changes:
            state["is_causal"] = _checks.boolean("is_causal", changes["is_causal"])
        with self.hold_sync():
            for k, v in state.items():
                setattr(self, k, v)

    def result(self) -> dict[str, torch.Tensor]:
        """The example computed from the state, float64: ``Q``, ``K``, ``V``, ``scores`` (``Q Kᵀ / sqrt(E)``,
        before the mask), ``weights`` (the softmax rows, masked when ``is_causal``) and ``out``."""
        X, W_Q, W_K, W_V = (torch.tensor(getattr(self, k), dtype=torch.float64) for k in ("X", "W_Q", "W_K", "W_V"))
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (L, E), (L, E), (L, Ev)
        scale = 1 / math.sqrt(K.shape[-1])
        out, weights = scaled_dot_product_attention(Q, K, V, is_causal=self.is_causal, scale=scale, return_weights=True)
        return {"Q": Q, "K": K, "V": V, "scores": Q @ K.T * scale, "weights": weights, "out": out}

    def __repr__(self) -> str:
        L, D = len(self.X), len(self.X[0])
        E, Ev = len(self.W_K[0]), len(self.W_V[0])
        return f"WorkedExampleExplorer(tokens={self.tokens}, X=({L}, {D}), E={E}, Ev={Ev}, is_causal={self.is_causal})"


def _matrix(name: str, value, rows: int | None = None) -> list:
    a = as_array(name, value)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"{name} must be a non-empty matrix, got shape {_checks.fmt(a.shape)}")
    if max(a.shape) > MAX_SIZE:
        raise ValueError(f"{name} has shape {_checks.fmt(a.shape)}: the explorer takes at most {MAX_SIZE} rows and columns")
    if rows is not None and a.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows (one per column of X), got shape {_checks.fmt(a.shape)}")
    if not (abs(a) <= LIMIT).all():
        raise ValueError(f"{name} has entries that are not finite numbers in [-{LIMIT:g}, {LIMIT:g}] (shape {_checks.fmt(a.shape)})")
    return rounded(a)


def _check(mats: dict, tokens) -> dict:
    X = _matrix("X", mats["X"])
    L, D = len(X), len(X[0])
    out = {"X": X, **{k: _matrix(k, mats[k], rows=D) for k in ("W_Q", "W_K", "W_V")}}
    if len(out["W_Q"][0]) != len(out["W_K"][0]):
        raise ValueError(f"W_Q and W_K need the same number of columns E (queries meet keys in a dot product), "
                         f"got {_checks.fmt((D, len(out['W_Q'][0])))} and {_checks.fmt((D, len(out['W_K'][0])))}")
    if isinstance(tokens, str):
        raise ValueError(f"tokens must be a list of tokens, got a single string {tokens[:30]!r}; split it first")
    out["tokens"] = [str(i) for i in range(L)] if tokens is None else [str(x) for x in tokens]
    if len(out["tokens"]) != L:
        raise ValueError(f"tokens has {len(out['tokens'])} entries but X has {L} rows (shape {_checks.fmt((L, D))})")
    return out
