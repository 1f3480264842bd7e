"""InductionExplorer: the trained two-layer attention-only model reads a repeated sequence in the page.

The reader types a segment of letters (or draws a random one); the page repeats it to fill the
model's context (``LENGTH`` tokens) and runs the model on it at once: after each position the
model's guess for the next letter, right or wrong, so the guesses turn right in the repeat; and,
for a chosen query position, one head's attention over the keys, the key one past the earlier
occurrence of the query's letter marked. Toggles silence (zero-ablate) heads, and everything is
computed again: silencing the induction head makes the repeat wrong again.

Which head is the previous-token head and which the induction head is measured in Python
(:func:`attn.book.induction_heads.head_scores` on held-out repeated sequences) and travels in the
state (``heads``), with the model's weights (``model_state``'s float16 JSON) that the front end
(``induction_explorer.js`` with ``_nn.js``) runs. :meth:`InductionExplorer.reading` is PyTorch's
side of what the page shows; ``guesses`` is what a reader without JavaScript sees.
"""

from __future__ import annotations

import anywidget
import torch
import traitlets as t

from attn import _checks

from attn.book import induction_heads
from attn.book.induction_heads import LENGTH, VOCAB
from attn.book.induction_heads import MAX_PERIOD as MAX_SEGMENT  # the longest period the model was trained on
from attn.book.widgets._state import CSS, Lang, front_end
from attn.book.widgets.model_state import model_state

__all__ = ["InductionExplorer"]

def _check_segment(segment) -> str:
    if not isinstance(segment, str) or not segment:
        raise ValueError(f"segment must be a non-empty string of lowercase letters a-z, got {segment!r}")
    bad = sorted(set(segment) - set(VOCAB))
    if bad:
        raise ValueError(f"segment has characters outside a-z: {bad}; the model's tokens are the 26 lowercase letters")
    if len(segment) > MAX_SEGMENT:
        raise ValueError(f"segment has {len(segment)} letters, at most {MAX_SEGMENT}: it is repeated to fill "
                         f"{LENGTH} positions, and the model was trained on periods up to {MAX_SEGMENT}")
    return segment


def sequence(segment: str) -> str:
    """``segment`` repeated to fill ``LENGTH`` positions (token i is ``segment[i % len(segment)]``)."""
    _check_segment(segment)
    return (segment * (LENGTH // len(segment) + 1))[:LENGTH]


def _measured_heads(model) -> dict:
    """Each layer's and head's previous-token and induction scores, and the best head of each kind."""
    scores = induction_heads.head_scores(model, *induction_heads.held_out())  # the chapter's held-out sequences
    prev, ind = (scores[k].double() for k in ("previous_token", "induction"))  # (layers, H)
    best = lambda s: [int(i) for i in divmod(int(s.argmax()), s.shape[1])]  # noqa: E731  [layer, head]
    return {"previous": best(prev), "induction": best(ind),
            "previous_scores": prev.round(decimals=4).tolist(), "induction_scores": ind.round(decimals=4).tolist()}


class InductionExplorer(anywidget.AnyWidget):
    """The book's induction-head model on a repeated sequence, live in the page, heads ablated on demand.

    Args:
        segment: 1 to 20 lowercase letters; the sequence shown is it repeated to fill 40 positions.
        model: an attention-only :class:`attn.models.TokenModel` over the 26 letters with a context of
            40 (default: the book's trained checkpoint, :func:`attn.book.induction_heads.load`).

    Shape:
        the reading of one sequence: weights ``(layers, H, L, L)`` and next-letter probabilities
        ``(L, 26)`` with ``L = 40``.

    Raises:
        ValueError: an empty segment, one longer than 20 letters, or characters outside a-z (named).
    """

    _esm = front_end("induction_explorer.js", parts=("_dom.js", "_nn.js"))
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    model = t.Dict().tag(sync=True)  # attn.book.widgets.model_state JSON of the model
    heads = t.Dict().tag(sync=True)  # {"previous": [layer, head], "induction": [...], "*_scores": (layers, H)}
    segment = t.Unicode().tag(sync=True)
    ablated = t.List().tag(sync=True)  # [[layer, head], ...]: heads silenced (zero-ablated)
    guesses = t.Unicode().tag(sync=True)  # PyTorch's top guess after each position: the no-JS view

    def __init__(self, segment: str = "python", model=None):
        _check_segment(segment)
        if model is None:
            model = induction_heads.load()
        self._torch_model = model.eval()
        super().__init__(model=model_state(model, vocab=list(VOCAB)), heads=_measured_heads(model), segment=segment)
        self._update_guesses(None)

    @t.validate("segment")
    def _valid_segment(self, proposal):
        return _check_segment(proposal["value"])

    @t.validate("ablated")
    def _valid_ablated(self, proposal):
        layers, H = len(self._torch_model.layers), self._torch_model.layers[0].self_attn.num_heads
        out = []
        for n, pair in enumerate(proposal["value"]):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"ablated must list [layer, head] pairs, got {pair!r} at ablated[{n}]")
            out.append([_checks.integer(f"ablated[{n}][0] (the layer)", pair[0], 0, layers, bounds="[)",
                                        high_name="layers"),
                        _checks.integer(f"ablated[{n}][1] (the head)", pair[1], 0, H, bounds="[)", high_name="H")])
        return [list(p) for p in sorted(set(map(tuple, out)))]

    @t.observe("segment", "ablated")
    def _update_guesses(self, _change) -> None:
        self.guesses = "".join(VOCAB[i] for i in self.reading()["probs"].argmax(-1).tolist())

    def reading(self, ablated=None) -> dict:
        """What the page shows: PyTorch's model reading the repeated sequence, ``ablated`` heads silenced.

        Args:
            ablated: ``[[layer, head], ...]`` to zero-ablate (``MultiHeadAttention.head_mask``); default:
                the explorer's ``ablated``.

        Returns:
            A dict with ``sequence`` (the ``L`` letters), ``weights`` ``(layers, H, L, L)`` (each layer's
            and head's causal attention), ``probs`` ``(L, 26)`` (after each position, the probabilities
            of the next letter), ``right`` ``(L - 1,)`` (whether the top guess after position ``i`` is
            the letter at ``i + 1``) and ``period`` (``n``; positions ``i >= n`` are the repeat).
        """
        from attn.attention import record_attention
        from attn.masks import masked_softmax

        ablated = self.ablated if ablated is None else ablated
        model, seq = self._torch_model, sequence(self.segment)
        ids = torch.tensor([[VOCAB.index(c) for c in seq]])  # (1, L)
        with induction_heads.ablated(model, ablated), torch.no_grad(), record_attention(model) as rec:
            logits = model(ids)[0]  # (L, 26)
        probs = masked_softmax(logits)
        right = probs[:-1].argmax(-1) == ids[0, 1:]
        return {"sequence": seq, "weights": torch.stack([w[0] for w in rec.values()]), "probs": probs, "right": right,
                "period": len(self.segment)}

    def __repr__(self) -> str:
        return f"InductionExplorer(segment={self.segment!r}, ablated={self.ablated!r}, guesses={self.guesses!r})"
