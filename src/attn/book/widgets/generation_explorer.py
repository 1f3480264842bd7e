"""GenerationExplorer: the book's trained GPT reads and continues a prompt the reader types, in the page.

As the reader types, the page runs the prompt through the model at once and shows every layer's and
head's attention weights (a grid of heatmaps, one query chosen from the keyboard) and the chosen
query's next-character prediction (:meth:`GenerationExplorer.reading` is PyTorch's side of it).

The model's weights travel in the synced state (``model_state``'s float16 JSON); the front end
(``generation_explorer.js`` with ``_nn.js``) runs the forward pass itself, one new character per
step, and draws the KV cache filling: a row of keys and a row of values per position, per layer.
Python checks the prompt and generates the same continuation with PyTorch (``generated``), which
the explorer shows before it computes and which is what a reader without JavaScript sees.
"""

from __future__ import annotations

import anywidget
import torch
import traitlets as t

from attn import _checks
from attn.book.widgets._state import CSS, Lang, front_end
from attn.book.widgets.model_state import checkpoint_state

__all__ = ["GenerationExplorer"]


class GenerationExplorer(anywidget.AnyWidget):
    """Greedy generation by the trained character-level GPT, with its KV cache, live in the page.

    Args:
        prompt: the text to continue; every character must be in the model's vocabulary
            (lower-case letters, digits, space and ``'(),-.:;``).
        max_new_tokens: characters to generate; ``len(prompt) + max_new_tokens`` must fit the
            model's context (64 characters).

    Shape:
        the cache of each layer holds keys and values ``(H, S, E)`` for the ``S`` positions so far.

    Raises:
        ValueError: an empty prompt, characters the model does not know (named), or a prompt and
            continuation longer than the context.
    """

    _esm = front_end("generation_explorer.js", parts=("_dom.js", "_nn.js"))
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    model = t.Dict().tag(sync=True)  # attn.book.widgets.model_state JSON of the trained GPT
    prompt = t.Unicode().tag(sync=True)
    max_new_tokens = t.Int(24).tag(sync=True)
    generated = t.Unicode().tag(sync=True)  # PyTorch's continuation of prompt: the no-JS view

    def __init__(self, prompt: str = "the model attends to ", max_new_tokens: int = 24):
        state = checkpoint_state("gpt")
        self._vocab = state["vocab"]
        self._max_len = state["config"]["max_len"]
        self._check(prompt, max_new_tokens)
        super().__init__(model=state, prompt=prompt, max_new_tokens=max_new_tokens)
        self.generated = self.continuation()

    def _check(self, prompt, max_new_tokens) -> None:
        if not isinstance(prompt, str) or not prompt:
            raise ValueError(f"prompt must be a non-empty string, got {prompt!r}")
        unknown = sorted(set(prompt) - set(self._vocab[3:]))  # ids 0-2 are <pad>, <s>, </s>
        if unknown:
            raise ValueError(f"prompt has characters the model does not know: {unknown}; it knows "
                             f"{''.join(self._vocab[3:])!r}")
        _checks.positive_int("max_new_tokens", max_new_tokens)
        if len(prompt) + max_new_tokens > self._max_len:
            raise ValueError(f"prompt has {len(prompt)} characters and max_new_tokens is {max_new_tokens}: "
                             f"{len(prompt) + max_new_tokens} positions, but the model's context is {self._max_len}")

    @t.validate("prompt")
    def _valid_prompt(self, proposal):
        self._check(proposal["value"], self.max_new_tokens)
        return proposal["value"]

    @t.validate("max_new_tokens")
    def _valid_max_new(self, proposal):
        self._check(self.prompt, proposal["value"])
        return proposal["value"]

    @t.observe("prompt", "max_new_tokens")
    def _regenerate(self, _change) -> None:
        self.generated = self.continuation()

    def _model(self):
        """The trained GPT in PyTorch, loaded on first use."""
        from attn.book import pretraining

        if not hasattr(self, "_torch_model"):
            self._torch_model = pretraining.load("gpt")[0]
        return self._torch_model

    def _ids(self) -> torch.Tensor:
        stoi = {c: i for i, c in enumerate(self._vocab)}
        return torch.tensor([[stoi[c] for c in self.prompt]])  # (1, P)

    def continuation(self) -> str:
        """The characters PyTorch's greedy ``generate`` adds to ``prompt`` (what the page computes)."""
        ids = self._ids()
        out = self._model().generate(ids, self.max_new_tokens)[0, ids.shape[1]:].tolist()
        return "".join(self._vocab[i] if i > 2 else "\u2400" for i in out)  # a special id shows as a symbol

    def reading(self) -> dict:
        """What the page shows as the reader types: PyTorch's model reading ``prompt`` in one pass.

        Returns:
            ``{"weights": (layers, H, P, P), "probs": (P, V)}`` for the ``P`` characters of the
            prompt: each layer's and head's attention weights (causal: zeros above the diagonal) and,
            after each position, the probabilities of the next character (``probs[-1]`` predicts the
            first generated one). The model is the float16 checkpoint run in float32.
        """
        from attn.attention import record_attention
        from attn.masks import masked_softmax

        model = self._model()
        with torch.no_grad(), record_attention(model) as rec:
            logits = model(self._ids())[0]  # (P, V)
        return {"weights": torch.stack([w[0] for w in rec.values()]), "probs": masked_softmax(logits)}

    def __repr__(self) -> str:
        return f"GenerationExplorer(prompt={self.prompt!r}, generated={self.generated!r})"
