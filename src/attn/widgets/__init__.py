"""Interactive explorers for the book, built on anywidget.

Each explorer keeps all its data in synced traits and draws (and answers input) in its own
self-contained JavaScript module, so it works in a live notebook, where Python can change it, and in
the static book, where no kernel runs:

- :class:`MaskExplorer`: every mask of :mod:`attn.masks` as a grid, its additive form and the softmax;
- :class:`AttentionExplorer`: attention weights ``(layers, heads, L, S)`` as lines or heatmaps;
- :class:`PositionalEncodingExplorer`: a positional table, the similarity of positions, and one
  dimension pair turning on the unit circle;
- :class:`GenerationExplorer`: the trained GPT continues the reader's prompt in the page, its KV
  cache filling step by step.

:func:`model_state` writes a model (:func:`checkpoint_state`: the book's trained GPT) as JSON for
``_nn.js``, the models' forward pass in the front end, so an explorer can run it in the page.
"""

from attn.widgets._state import state_size_bytes
from attn.widgets.attention_explorer import AttentionExplorer
from attn.widgets.generation_explorer import GenerationExplorer
from attn.widgets.mask_explorer import KINDS, MaskExplorer, seeded_scores
from attn.widgets.model_state import checkpoint_state, model_state
from attn.widgets.positional_explorer import PositionalEncodingExplorer

__all__ = ["KINDS", "AttentionExplorer", "GenerationExplorer", "MaskExplorer", "PositionalEncodingExplorer",
           "checkpoint_state", "model_state", "seeded_scores", "state_size_bytes"]
