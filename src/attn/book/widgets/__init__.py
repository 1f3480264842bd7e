"""Interactive explorers for the book, built on anywidget.

Each explorer keeps all its data in synced traits and draws (and answers input) in its own
self-contained JavaScript module, so it works in a live notebook, where Python can change it, and in
the static book, where no kernel runs:

- :class:`MaskExplorer`: every mask of :mod:`attn.masks` as a grid, its additive form and the softmax;
- :class:`AttentionExplorer`: attention weights ``(layers, heads, L, S)`` as lines or heatmaps;
- :class:`PositionalEncodingExplorer`: a positional table, the similarity of positions, and one
  dimension pair turning on the unit circle;
- :class:`WorkedExampleExplorer`: the chapters' small Q/K/V example with numbers the reader edits;
  scores, softmax rows and outputs are computed in the page as they type;
- :class:`OnlineSoftmaxExplorer`: one query's tiled (online-softmax) pass, stepped block by block;
- :class:`GenerationExplorer`: the trained GPT continues the reader's prompt in the page, its KV
  cache filling step by step;
- :class:`InductionExplorer`: the trained two-layer attention-only model reads a repeated segment; its
  guesses turn right in the repeat, the induction head looks one past the earlier occurrence, and
  silencing a head undoes it.

:func:`model_state` writes a model (:func:`checkpoint_state`: the book's trained GPT) as JSON for
``_nn.js``, the models' forward pass in the front end, so an explorer can run it in the page.
"""

from attn.book.widgets._state import state_size_bytes
from attn.book.widgets.attention_explorer import AttentionExplorer
from attn.book.widgets.generation_explorer import GenerationExplorer
from attn.book.widgets.induction_explorer import InductionExplorer
from attn.book.widgets.mask_explorer import KINDS, MaskExplorer, seeded_scores
from attn.book.widgets.model_state import checkpoint_state, model_state
from attn.book.widgets.online_softmax import OnlineSoftmaxExplorer
from attn.book.widgets.positional_explorer import PositionalEncodingExplorer
from attn.book.widgets.worked_example import WorkedExampleExplorer

__all__ = ["KINDS", "AttentionExplorer", "GenerationExplorer", "InductionExplorer", "MaskExplorer", "OnlineSoftmaxExplorer",
           "PositionalEncodingExplorer", "WorkedExampleExplorer", "checkpoint_state", "model_state", "seeded_scores",
           "state_size_bytes"]
