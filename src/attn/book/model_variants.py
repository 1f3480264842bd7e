"""What "Model variants" shows: the five variants' description cards as one Markdown table.

The trained models, their objectives and baselines are :mod:`attn.book.pretraining`.
"""

from __future__ import annotations

from attn.variants import BART, BERT, GPT, T5, ViT, comparison

__all__ = ["comparison_markdown"]


def comparison_markdown(classes=(BERT, GPT, T5, BART, ViT)) -> str:
    """:func:`attn.variants.comparison` as a Markdown table."""
    rows = comparison(classes)
    head = list(rows[0])  # "model", then the cards' columns in order
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    return "\n".join(lines)
