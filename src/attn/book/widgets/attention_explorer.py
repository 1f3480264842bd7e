"""AttentionExplorer: attention weights ``(layers, heads, L, S)`` as a head view, lines or heatmaps.

Weights are checked here, before anything is drawn, and kept in the synced state 8-bit quantised per
row (``_state.quantize_rows``: error at most 1/510 of the row's range, so < 1/255 for softmax weights); ``attention_explorer.js`` draws them, so the view answers hover, clicks and keys in the static
book too. Tokens are shown as text only, never parsed as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anywidget
import numpy as np
import torch
import traitlets as t

from attn import _checks
from attn.book.widgets._state import CSS, Lang, as_array, dequantize_rows, front_end, quantize_rows

__all__ = ["AttentionExplorer"]

VIEWS = ("lines", "heatmap")
_LAYOUT = "(layers, heads, L, S)"


def _tokens(name: str, tokens) -> list[str]:
    if isinstance(tokens, str):
        raise ValueError(f"{name} must be a list of tokens, got a single string {tokens[:30]!r}; split it first")
    if isinstance(tokens, (torch.Tensor, np.ndarray)):
        tokens = tokens.tolist()
    try:
        out = [str(x) for x in tokens]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of tokens (strings), got {type(tokens).__name__}") from None
    if not out:
        raise ValueError(f"{name} is empty: need one token per position")
    return out


def _weights(weights, batch_index: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """-> float64 ``(layers, heads, L, S)`` and the shape received."""
    if isinstance(weights, Mapping):  # {layer name: weights}, e.g. from attn.record_attention
        weights = list(weights.values())
    if isinstance(weights, (list, tuple)) and weights and all(isinstance(w, (torch.Tensor, np.ndarray)) for w in weights):
        # One tensor per layer, e.g. Hugging Face's `outputs.attentions`: stack the layers.
        parts = [as_array("weights", w) for w in weights]
        if len({p.shape for p in parts}) != 1:
            raise ValueError(f"weights is a list of per-layer tensors with different shapes {[_checks.fmt(p.shape) for p in parts]}")
        a = np.stack(parts, axis=1 if parts[0].ndim == 4 else 0)
    else:
        a = as_array("weights", weights)
    shape = tuple(a.shape)
    if a.ndim == 3:
        a = a[None]  # (1, heads, L, S)
    elif a.ndim == 5:
        _checks.integer("batch_index", batch_index, -shape[0], shape[0], bounds="[)",
                        what=f" (weights of shape {_checks.fmt(shape)} hold {shape[0]} sequences)")
        a = a[batch_index]
    elif a.ndim != 4:
        raise ValueError(
            f"weights must have 3, 4 or 5 dimensions: (heads, L, S), {_LAYOUT} or (batch, layers, heads, L, S); "
            f"got {a.ndim} dimensions, shape {_checks.fmt(shape)}")
    if 0 in a.shape:
        raise ValueError(f"weights has an empty dimension: shape {_checks.fmt(shape)}, read as {_LAYOUT} = {_checks.fmt(a.shape)}")
    return a, shape


def check(tokens, key_tokens, weights, *, batch_index: int = 0, normalized: bool = True, quantized: bool = False):
    """Validate the explorer's data; returns ``(tokens, key_tokens, weights (layers, heads, L, S))``.

    Errors name the argument, the shape received and the shape expected. ``quantized``: the weights are
    the explorer's own 8-bit copy, so row sums may be off by up to ``S / 510``.
    """
    q = _tokens("tokens", tokens)
    k = q if key_tokens is None else _tokens("key_tokens", key_tokens)
    a, shape = _weights(weights, batch_index)
    layers, heads, L, S = a.shape
    read = f"shape {_checks.fmt(shape)}, read as {_LAYOUT} = {_checks.fmt(a.shape)}"
    if L != len(q):
        raise ValueError(f"tokens has {len(q)} entries but weights has L={L} query positions ({read}); "
                         f"expected weights shaped (layers, heads, {len(q)}, S)")
    if S != len(k):
        which = "key_tokens (default: tokens, i.e. self-attention)" if key_tokens is None else "key_tokens"
        raise ValueError(f"{which} has {len(k)} entries but weights has S={S} key positions ({read}); "
                         f"expected weights shaped (layers, heads, L, {len(k)})")
    bad = ~np.isfinite(a)
    if bad.any():
        at = list(map(int, np.argwhere(bad)[0]))
        raise ValueError(f"weights contains NaN or infinite values (first at [layer, head, query, key] = {at}; {read}); "
                         "attention weights must be finite")
    if (a < 0).any():
        at = list(map(int, np.argwhere(a < 0)[0]))
        raise ValueError(f"weights contains negative values (min {a.min():.4g}, first at [layer, head, query, key] = {at}; "
                         f"{read}); attention weights are >= 0: pass softmax outputs, not scores")
    if normalized:
        sums = a.sum(-1)  # (layers, heads, L)
        tol = 1e-3 + 5e-5 * S + (S / 510 if quantized else 0)  # float32 softmax, rounded weights, 8-bit copy
        off = ~((np.abs(sums - 1.0) <= tol) | (sums == 0))
        if off.any():
            at = list(map(int, np.argwhere(off)[0]))
            raise ValueError(f"with normalized=True each row of weights must sum to 1 (or be all 0 for a fully masked "
                             f"query), but the row at [layer, head, query] = {at} sums to {sums[tuple(at)]:.4f} ({read}); "
                             "pass normalized=False to show unnormalized non-negative values")
    return q, k, a


def _layer_names(weights, layers: int, names) -> list[str]:
    if names is None and isinstance(weights, Mapping):
        names = list(weights)
    if names is None:
        return []  # numbered 1, 2, ... by the front end
    names = [str(n) for n in names]
    if len(names) != layers:
        raise ValueError(f"layer_names has {len(names)} entries but weights has {layers} layer(s)")
    return names


class AttentionExplorer(anywidget.AnyWidget):
    """Head view of attention weights: pick a layer, toggle heads, follow one query token.

    Args:
        tokens: the ``L`` query tokens (strings; shown as text only).
        weights: ``(heads, L, S)``, ``(layers, heads, L, S)`` or ``(batch, layers, heads, L, S)`` (torch or
            numpy), or one ``(heads, L, S)`` / ``(batch, heads, L, S)`` tensor per layer, as a list or as a
            dict ``{layer name: tensor}`` (what :class:`attn.record_attention` collects; the names label the layers).
        key_tokens: the ``S`` key tokens; default ``tokens`` (self-attention). Different: cross-attention.
        batch_index: which sequence of a batched ``weights`` to show.
        normalized: ``True`` requires every row to sum to 1 (or be all zeros: a fully masked query);
            ``False`` accepts any non-negative values and scales them by their maximum.
        layer: the layer shown first. heads: which heads are shown (default: all).
        view: ``"lines"`` (tokens in two columns, line opacity = weight) or ``"heatmap"`` (one map per head).
        query: the query highlighted (``None``: none).
        layer_names: a label per layer (default: the dict's keys, else the layers are numbered).

    Shape:
        ``weights[layer, head, i, j]`` is how much query ``i`` attends to key ``j``.
    """

    _esm = front_end("attention_explorer.js")
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    tokens = t.List(t.Unicode()).tag(sync=True)
    key_tokens = t.List(t.Unicode()).tag(sync=True)
    weights = t.Dict().tag(sync=True)  # (layers, heads, L, S), 8-bit per row: see _state.quantize_rows
    normalized = t.Bool(True).tag(sync=True)
    layer = t.Int(0).tag(sync=True)
    heads = t.List(t.Bool()).tag(sync=True)  # shown or not, one per head
    view = t.Unicode("lines").tag(sync=True)
    query = t.Int(-1).tag(sync=True)  # highlighted query, -1: none
    layer_names = t.List(t.Unicode()).tag(sync=True)

    def __init__(
        self,
        tokens: Sequence[str],
        weights,
        *,
        key_tokens: Sequence[str] | None = None,
        batch_index: int = 0,
        normalized: bool = True,
        layer: int = 0,
        heads: Sequence[int] | None = None,
        view: str = "lines",
        query: int | None = None,
        layer_names: Sequence[str] | None = None,
    ):
        q, k, a = check(tokens, key_tokens, weights, batch_index=batch_index, normalized=normalized)
        layers, H, L, _ = a.shape
        names = _layer_names(weights, layers, layer_names)
        self._self_attention = key_tokens is None
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
        _checks.integer("layer", layer, -layers, layers, bounds="[)", what=f" (weights has {layers} layer(s))")
        for n, h in enumerate(() if heads is None else heads):
            _checks.integer(f"heads[{n}]", h, 0, H, bounds="[)", what=" (a head index)")
        shown = [True] * H if heads is None else [h in set(heads) for h in range(H)]
        if query is not None:
            _checks.integer("query", query, 0, L, bounds="[)", what=f" (weights has {L} query tokens)")
        super().__init__(tokens=q, key_tokens=k, weights=quantize_rows(a), normalized=normalized, layer=layer % layers,
                         heads=shown, view=view, query=-1 if query is None else query, layer_names=names)

    @t.validate("view")
    def _v_view(self, proposal):
        if proposal["value"] not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {proposal['value']!r}")
        return proposal["value"]

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(layers, heads, L, S)`` of the weights held."""
        layers, H, L, S = self.weights["shape"]
        return layers, H, L, S

    def weight_tensor(self) -> torch.Tensor:
        """The weights as the front end shows them (decoded from 8 bits), float64 ``(layers, heads, L, S)``.

        Each differs from the weights given by at most ``(hi - lo) / 510``, ``hi``/``lo`` its row's extremes.
        """
        return torch.from_numpy(dequantize_rows(self.weights))

    def update(self, tokens=None, weights=None, *, key_tokens=None, batch_index: int = 0, normalized: bool | None = None,
               layer_names: Sequence[str] | None = None) -> None:
        """Replace the data live: the new data is checked first, then sent in one message and redrawn.

        Arguments left out keep their current value; with self-attention, new ``tokens`` are also the keys.
        """
        self_att = self._self_attention if key_tokens is None else False
        q = self.tokens if tokens is None else tokens
        k = key_tokens if key_tokens is not None else (None if self_att else self.key_tokens)
        norm = self.normalized if normalized is None else normalized
        w = self.weight_tensor() if weights is None else weights
        q, k, a = check(q, k, w, batch_index=batch_index, normalized=norm, quantized=weights is None)
        layers, H, L, _ = a.shape
        if weights is None and layer_names is None:
            layer_names = self.layer_names or None  # [] means numbered
        names = _layer_names(weights, layers, layer_names)
        old = self.heads
        with self.hold_sync():
            self.tokens, self.key_tokens, self.normalized = q, k, norm
            if weights is not None:  # the stored 8-bit copy is kept as it is otherwise
                self.weights = quantize_rows(a)
            self.layer_names = names
            self.layer = min(self.layer, layers - 1)
            self.heads = [old[h] if h < len(old) else True for h in range(H)]
            if self.query >= L:
                self.query = -1
        self._self_attention = self_att

    def __repr__(self) -> str:
        layers, H, L, S = self.shape
        kind = "self" if self._self_attention else "cross"
        return f"AttentionExplorer({kind}-attention, layers={layers}, heads={H}, L={L}, S={S}, view={self.view!r})"
