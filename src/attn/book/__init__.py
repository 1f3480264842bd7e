"""The book's material: what the chapters of the attn-book use to teach, beside the library.

The library (``attn``: the maths, masks, modules, models, kernels, generation, measurement and
diagnosis) never imports anything here; this part builds on the library. A chapter writes
``from attn import book`` and then ``book.viz.heatmap(...)``; each module loads on first use
(``book.viz`` brings matplotlib, ``book.widgets`` anywidget).

Shared by the chapters:

- :mod:`attn.book.examples`: the worked example ("the cat sat") and matrices shown side by side;
- :mod:`attn.book.data`: toy tasks generated from a seed, each with its ground truth, and the
  English text the language models read;
- :mod:`attn.book.train`: the training loop, the token loss, runs side by side, a moving average;
- :mod:`attn.book.pretraining`: the trained BERT, GPT and T5 (recipes, objectives, baselines and
  the checkpoints shipped with the package);
- :mod:`attn.book.finetune`: pre-train, then fine-tune: a labelled task made from the text, a small
  BERT fine-tuned on it with and without masked-LM pre-training;
- :mod:`attn.book.results`: the stored results of the benchmarks and training scripts;
- :mod:`attn.book.notebook`: glue for the prose, in the book's build and outside it;
- :mod:`attn.book.viz` (plots and tables) and :mod:`attn.book.diagram` (figures of the ideas);
- :mod:`attn.book.widgets`: the interactive explorers;
- :mod:`attn.book.exercises` (checkers), :mod:`attn.book.bugs` (the bug zoo) and
  :mod:`attn.book.source_listing` (the source document's listing, run).

One module per chapter for what only that chapter computes and measures, named after it
(``book/<name>.ipynb``): :mod:`~attn.book.why_attention`, :mod:`~attn.book.self_attention`,
:mod:`~attn.book.multi_head_attention`, :mod:`~attn.book.cross_attention`,
:mod:`~attn.book.causal_attention`, :mod:`~attn.book.positional_encodings`,
:mod:`~attn.book.transformer_architecture`, :mod:`~attn.book.model_variants`,
:mod:`~attn.book.debugging_attention`, :mod:`~attn.book.induction_heads`, :mod:`~attn.book.efficient_attention`,
:mod:`~attn.book.applications`; and :mod:`~attn.book.scaling`
(small language models trained at several sizes and data budgets, a power law fitted to them).
"""

import importlib

#: Every module of the book's material, loaded on first use.
MODULES = (
    "applications", "bugs", "causal_attention", "cross_attention", "data", "debugging_attention", "diagram",
    "efficient_attention", "examples",
    "exercises", "finetune", "induction_heads", "model_variants", "multi_head_attention", "notebook", "positional_encodings", "pretraining",
    "results", "scaling", "self_attention", "source_listing", "train", "transformer_architecture", "viz",
    "why_attention", "widgets",
)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"attn.book.{name}")  # the import also sets attn.book.<name>
    raise AttributeError(f"module 'attn.book' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(MODULES))


__all__ = list(MODULES)
