"""OnlineSoftmaxExplorer: one query's tiled ("flash") pass, stepped block by block on the reader's numbers.

The synced state holds one query's scores (already scaled), one number per key as its value, the
block size and how many blocks are done. The front end (``online_softmax.js``, with the shared maths
of ``_nn.js``) recomputes every step as the reader edits: the running maximum, the rescale factor
``exp(m_old - m)``, the running sum, the unnormalised output, the estimate ``a / ℓ`` and its difference
from full attention over all keys, as :func:`attn.book.diagram.tiled_pass` draws it.
:meth:`OnlineSoftmaxExplorer.steps` is the Python reference (:func:`attn.efficient.online_softmax_steps`
and :func:`attn.scaled_dot_product_attention`) the tests hold the browser's numbers to.
"""

from __future__ import annotations

import anywidget
import torch
import traitlets as t

from attn import _checks
from attn.functional import scaled_dot_product_attention
from attn.book.widgets._state import CSS, LIMIT, Lang, as_array, front_end, rounded

__all__ = ["MAX_KEYS", "OnlineSoftmaxExplorer"]

MAX_KEYS = 32
# The figure's example (attn.book.diagram.tiled_pass): eight keys in blocks of two.
SCORES = (1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0, 2.0)
VALUES = (2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 0.0, 4.0)


class OnlineSoftmaxExplorer(anywidget.AnyWidget):
    """One query's online softmax over its keys, a block at a time, with buttons and arrow keys.

    Args:
        scores: the query's scores ``q · k_j / sqrt(d_k)``, one per key (default: the chapter figure's 8).
        values: one number per key (default: the figure's).
        block_size: keys per block (1 to the number of keys).
        step: blocks already processed when shown (0 to the number of blocks).

    Raises:
        ValueError: scores and values of different or zero length, more than ``MAX_KEYS`` keys, entries
            not finite or larger than ``LIMIT`` in magnitude, a block size or step out of range.
    """

    _esm = front_end("online_softmax.js", parts=("_dom.js", "_nn.js"))
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    scores = t.List(t.Float()).tag(sync=True)  # (S,)
    values = t.List(t.Float()).tag(sync=True)  # (S,)
    block_size = t.Int(2).tag(sync=True)
    step = t.Int(0).tag(sync=True)  # blocks done: 0 .. ceil(S / block_size)

    def __init__(self, scores=SCORES, values=VALUES, *, block_size: int = 2, step: int = 0):
        super().__init__(**_check(scores, values, block_size, step))

    @property
    def n_blocks(self) -> int:
        return -(-len(self.scores) // self.block_size)

    def update(self, *, scores=None, values=None, block_size: int | None = None, step: int | None = None) -> None:
        """Replace any of the four live (checked together); the step is kept where it still fits."""
        s = self.scores if scores is None else scores
        v = self.values if values is None else values
        b = min(self.block_size, len(as_array("scores", s).reshape(-1))) if block_size is None else block_size
        state = _check(s, v, b, 0)
        n_blocks = -(-len(state["scores"]) // state["block_size"])
        state["step"] = _check(s, v, b, min(self.step, n_blocks) if step is None else step)["step"]
        with self.hold_sync():
            for k, val in state.items():
                setattr(self, k, val)

    def full_output(self) -> float:
        """Attention over all keys at once: ``softmax(scores) · values``, by :func:`attn.scaled_dot_product_attention`."""
        s = torch.tensor(self.scores, dtype=torch.float64)[:, None]  # (S, 1): keys whose dot with q = [1] is the score
        v = torch.tensor(self.values, dtype=torch.float64)[:, None]  # (S, 1)
        q = torch.ones(1, 1, dtype=torch.float64)  # (1, 1)
        return float(scaled_dot_product_attention(q, s, v, scale=1.0)[0, 0])

    def steps(self) -> list[dict[str, float]]:
        """:func:`attn.efficient.online_softmax_steps` for the state, each step with ``estimate`` (``a / ℓ``)
        and ``difference`` (``a / ℓ`` minus :meth:`full_output`) added."""
        from attn.efficient.tiled import online_softmax_steps

        full = self.full_output()
        out = []
        for st in online_softmax_steps(self.scores, self.values, self.block_size):
            est = st["a"] / st["ell"]
            out.append({**st, "estimate": est, "difference": est - full})
        return out

    def __repr__(self) -> str:
        return (f"OnlineSoftmaxExplorer(keys={len(self.scores)}, block_size={self.block_size}, "
                f"step={self.step} of {self.n_blocks})")


def _check(scores, values, block_size, step) -> dict:
    s, v = as_array("scores", scores), as_array("values", values)
    if s.ndim != 1 or v.ndim != 1 or s.size == 0 or s.size != v.size:
        raise ValueError(f"scores and values must be two lists of the same non-zero length, got shapes "
                         f"{_checks.fmt(s.shape)} and {_checks.fmt(v.shape)}")
    if s.size > MAX_KEYS:
        raise ValueError(f"scores has {s.size} keys: the explorer takes at most {MAX_KEYS}")
    for name, a in (("scores", s), ("values", v)):
        if not (abs(a) <= LIMIT).all():
            raise ValueError(f"{name} has entries that are not finite numbers in [-{LIMIT:g}, {LIMIT:g}]")
    _checks.integer("block_size", block_size, 1, s.size, high_name="keys")
    n_blocks = -(-s.size // block_size)
    _checks.integer("step", step, 0, n_blocks, high_name="blocks", what=" (the blocks already processed)")
    return {"scores": rounded(s), "values": rounded(v), "block_size": block_size, "step": step}
