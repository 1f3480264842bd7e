"""MaskExplorer: every mask of :mod:`attn.masks` as a grid the reader can change.

The front end (``mask_explorer.js``) rebuilds each mask from the synced parameters with the same rules
as :mod:`attn.masks` (a test runs both and compares), so the explorer responds in the static book
where no Python runs. :meth:`MaskExplorer.mask` returns the same mask, built by :mod:`attn.masks`.
"""

from __future__ import annotations

from collections.abc import Sequence

import anywidget
import torch
import traitlets as t

from attn import _checks, masks
from attn.book.widgets._state import CSS, Lang, as_array, front_end, rounded

__all__ = ["KINDS", "MAX_LEN", "MaskExplorer", "seeded_scores"]

KINDS = ("none", "causal", "padding", "causal+padding", "sliding_window", "dilated", "local_global", "bigbird",
         "prefix_lm", "cross_padding")
MAX_LEN = 32  # largest L or S the grid is drawn for (the book's column is ~700 px wide)

# The parameters each kind reads, in the order the repr shows them.
_USES = {
    "none": (), "causal": (), "padding": ("lengths", "batch"), "causal+padding": ("lengths", "batch"),
    "sliding_window": ("window",), "dilated": ("window", "dilation"), "local_global": ("window", "global_tokens"),
    "bigbird": ("window", "global_tokens", "num_random", "seed"), "prefix_lm": ("prefix",),
    "cross_padding": ("src_lengths", "batch"),
}


def seeded_scores(seed: int, L: int, S: int) -> torch.Tensor:
    """Scores ``4 u - 2`` in ``[-2, 2)``, ``u`` read row by row from :func:`attn.masks.seeded_uniform`.

    The explorer's JavaScript draws the same numbers, so a seed gives the same softmax everywhere.

    Returns:
        float64 tensor of shape ``(L, S)``.
    """
    rng = masks.seeded_uniform(seed)
    return torch.tensor([[4 * next(rng) - 2 for _ in range(S)] for _ in range(L)], dtype=torch.float64)


def _clamp(v: int, lo: int, hi: int) -> int:
    return min(hi, max(lo, int(v)))


class MaskExplorer(anywidget.AnyWidget):
    """An interactive attention mask: the allowed/blocked grid, its additive form and the softmax weights.

    Args:
        kind: one of :data:`KINDS`.
        L: number of queries (rows), ``1 .. 32``. S: number of keys (columns); ``None`` keeps ``S = L``.
        window: half-width of the local window (``|i - j| < window``), for the window kinds.
        dilation: step between attended keys, for ``"dilated"``.
        lengths: true length of each sequence of the batch, for ``"padding"`` and ``"causal+padding"``
            (default ``[S, S - 3]``). src_lengths: the same for the source of ``"cross_padding"``.
        batch: which sequence of the batch is shown.
        global_tokens: positions that see and are seen by all, for ``"local_global"`` and ``"bigbird"``.
        num_random: random keys per query, and seed: the stream they (and seeded scores) come from.
        prefix: length of the fully visible prefix, for ``"prefix_lm"`` (``S = L`` there).
        scores: an ``(L, S)`` score matrix for the softmax panel; default: seeded scores
            (:func:`seeded_scores`). If ``L`` or ``S`` later change, seeded scores are used.
        kinds: the kinds offered in the selector.

    Shape:
        :meth:`mask` is ``(L, S)``: row ``i`` says which keys query ``i`` may attend (``True`` = allowed).
    """

    _esm = front_end("mask_explorer.js")
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    kind = t.Unicode("causal").tag(sync=True)
    kinds = t.List(t.Unicode(), default_value=list(KINDS)).tag(sync=True)
    L = t.Int(8).tag(sync=True)
    S = t.Int(None, allow_none=True).tag(sync=True)
    window = t.Int(2).tag(sync=True)
    dilation = t.Int(2).tag(sync=True)
    lengths = t.List(t.Int()).tag(sync=True)
    src_lengths = t.List(t.Int()).tag(sync=True)
    batch = t.Int(0).tag(sync=True)
    global_tokens = t.List(t.Int(), default_value=[0]).tag(sync=True)
    num_random = t.Int(2).tag(sync=True)
    seed = t.Int(0).tag(sync=True)
    prefix = t.Int(3).tag(sync=True)
    scores = t.List().tag(sync=True)  # [] = seeded scores

    def __init__(
        self,
        kind: str = "causal",
        L: int = 8,
        S: int | None = None,
        *,
        window: int = 2,
        dilation: int = 2,
        lengths: Sequence[int] | None = None,
        batch: int = 0,
        global_tokens: Sequence[int] = (0,),
        num_random: int = 2,
        seed: int = 0,
        prefix: int = 3,
        src_lengths: Sequence[int] | None = None,
        scores=None,
        kinds: Sequence[str] = KINDS,
    ):
        values = self._checked(dict(
            kind=kind, L=L, S=S, window=window, dilation=dilation, lengths=lengths, batch=batch,
            global_tokens=global_tokens, num_random=num_random, seed=seed, prefix=prefix,
            src_lengths=src_lengths, scores=scores, kinds=kinds))
        super().__init__(**values)

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _checked(v: dict) -> dict:
        """Strict checks for values given by Python; errors name the argument."""
        _check_kind(v["kind"])
        _check_len("L", v["L"])
        if v["S"] is not None:
            _check_len("S", v["S"])
        S = v["L"] if v["S"] is None or v["kind"] == "prefix_lm" else v["S"]
        for name in ("window", "dilation"):
            _checks.positive_int(name, v[name])
        for name in ("num_random", "seed", "prefix", "batch"):
            _checks.non_negative_int(name, v[name])
        # Parameters the kind reads must fit L and S; the others are kept, limited as the front end does.
        uses = _USES[v["kind"]]
        for name in ("lengths", "src_lengths"):
            if v[name] is None:
                v[name] = [S, max(1, S - 3)]
            v[name] = [int(n) for n in v[name]]
            if not v[name] or any(n < 0 or (n > S and name in uses) for n in v[name]):
                raise ValueError(f"{name} must be a non-empty list of lengths in [0, S={S}], got {v[name]}")
            v[name] = [min(n, S) for n in v[name]]
        v["global_tokens"] = [int(g) for g in v["global_tokens"]]
        bad = [g for g in v["global_tokens"] if g < 0 or (g >= min(v["L"], S) and "global_tokens" in uses)]
        if bad:
            raise ValueError(f"global_tokens {bad} are outside [0, min(L, S)) = [0, {min(v['L'], S)})")
        v["kinds"] = list(v["kinds"])
        for k in v["kinds"]:
            _check_kind(k)
        if v["kind"] not in v["kinds"]:
            v["kinds"].append(v["kind"])
        if v["scores"] is None:
            v["scores"] = []
        else:
            s = as_array("scores", v["scores"])
            if s.shape != (v["L"], S):
                raise ValueError(f"scores has shape {_checks.fmt(s.shape)}, expected (L, S) = ({v['L']}, {S})")
            if not (abs(s) < float("inf")).all():
                raise ValueError("scores must be finite: the mask, not the scores, removes pairs")
            v["scores"] = rounded(s)
        return v

    @t.validate("kind")
    def _v_kind(self, proposal):
        return _check_kind(proposal["value"])

    @t.validate("L")
    def _v_L(self, proposal):
        return _check_len("L", proposal["value"])

    @t.validate("S")
    def _v_S(self, proposal):
        return proposal["value"] if proposal["value"] is None else _check_len("S", proposal["value"])

    # ------------------------------------------------------------------ what is drawn
    def _params(self) -> dict:
        """The parameters drawn, cross-field limits applied (same rules as ``normalize`` in the JS)."""
        L = self.L
        S = L if self.S is None or self.kind == "prefix_lm" else self.S

        def lens(x):
            return [_clamp(n, 0, S) for n in (x or [S])]

        lengths, src_lengths = lens(self.lengths), lens(self.src_lengths)
        nb = len(src_lengths if self.kind == "cross_padding" else lengths)
        return dict(
            kind=self.kind, L=L, S=S, lengths=lengths, src_lengths=src_lengths, batch=_clamp(self.batch, 0, nb - 1),
            window=max(1, self.window), dilation=max(1, self.dilation),
            global_tokens=sorted({g for g in self.global_tokens if 0 <= g < min(L, S)}),
            num_random=_clamp(self.num_random, 0, S), seed=_clamp(self.seed, 0, 2**32 - 1),
            prefix=_clamp(self.prefix, 0, L),
        )

    def mask(self) -> torch.Tensor:
        """The mask shown, built by :mod:`attn.masks`: bool ``(L, S)``, ``True`` = may attend.

        For the batch kinds it is the shown sequence (``batch``) of the ``(B, L, S)`` mask.
        """
        p = self._params()
        kind, L, S, b = p["kind"], p["L"], p["S"], p["batch"]
        if kind == "none":
            return torch.ones(L, S, dtype=torch.bool)
        if kind == "causal":
            return masks.causal(L, S)
        if kind == "padding":
            return masks.padding(p["lengths"], S, L=L)[b]
        if kind == "causal+padding":
            return masks.combine(masks.causal(L, S), masks.padding(p["lengths"], S, L=L))[b]
        if kind == "sliding_window":
            return masks.sliding_window(L, S, window=p["window"])
        if kind == "dilated":
            return masks.dilated(L, S, window=p["window"], dilation=p["dilation"])
        if kind == "local_global":
            return masks.local_global(L, S, window=p["window"], global_tokens=p["global_tokens"])
        if kind == "bigbird":
            return masks.bigbird(L, S, window=p["window"], global_tokens=p["global_tokens"],
                                 num_random=p["num_random"], seed=p["seed"])
        if kind == "prefix_lm":
            return masks.prefix_lm(L, p["prefix"])
        return masks.cross_padding(p["src_lengths"], L, S)[b]  # cross_padding

    def score_matrix(self) -> torch.Tensor:
        """The scores fed to the softmax panel, float64 ``(L, S)``: the given ones if their shape is
        still ``(L, S)``, otherwise :func:`seeded_scores` from ``seed``."""
        p = self._params()
        if self.scores and len(self.scores) == p["L"] and all(len(r) == p["S"] for r in self.scores):
            return torch.tensor(self.scores, dtype=torch.float64)
        return seeded_scores(p["seed"], p["L"], p["S"])

    def weights(self) -> torch.Tensor:
        """Masked softmax of :meth:`score_matrix`, float64 ``(L, S)``; fully masked rows are zeros, not NaN."""
        return masks.masked_softmax(self.score_matrix(), self.mask())  # (L, S)

    def density(self) -> float:
        """Fraction of (query, key) pairs allowed."""
        return self.mask().float().mean().item()

    def update(self, **changes) -> None:
        """Change several parameters at once (checked as in the constructor; one message to the view)."""
        unknown = set(changes) - set(_PARAMS)
        if unknown:
            raise TypeError(f"update() got unknown parameters {sorted(unknown)}; known: {list(_PARAMS)}")
        v = {k: getattr(self, k) for k in _PARAMS} | changes
        L = v["L"]
        S = L if v["S"] is None or v["kind"] == "prefix_lm" else v["S"]
        # Values not passed follow the new L and S, as in the front end; values passed are checked.
        for k in ("lengths", "src_lengths"):
            if k not in changes:
                v[k] = [_clamp(n, 0, S) for n in v[k]] if isinstance(S, int) else v[k]
        if "global_tokens" not in changes and isinstance(S, int) and isinstance(L, int):
            v["global_tokens"] = [g for g in v["global_tokens"] if g < min(L, S)]
        if "prefix" not in changes and isinstance(L, int):
            v["prefix"] = min(v["prefix"], L)
        if "scores" not in changes:  # kept while their shape still fits
            cur = v["scores"]
            v["scores"] = cur if cur and len(cur) == L and all(len(r) == S for r in cur) else None
        values = self._checked(v)
        with self.hold_sync():
            for k, value in values.items():
                setattr(self, k, value)

    def __repr__(self) -> str:
        p = self._params()
        extra = "".join(f", {k}={p[k]!r}" for k in _USES[p["kind"]])
        return f"MaskExplorer(kind={p['kind']!r}, L={p['L']}, S={p['S']}{extra})"


_PARAMS = ("kind", "L", "S", "window", "dilation", "lengths", "batch", "global_tokens", "num_random", "seed",
           "prefix", "src_lengths", "scores", "kinds")


def _check_kind(kind) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    return kind


def _check_len(name: str, n) -> int:
    return _checks.integer(name, n, 1, MAX_LEN, what=" (the grid's size)")
