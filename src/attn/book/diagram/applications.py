"""The idea of "Where attention is used", drawn: one mechanism, many kinds of token.

- :func:`one_mechanism`: words, image patches and audio frames each become a sequence of ``n``
  vectors, and the same attention layer reads any of them; only what a token is, and so ``n``,
  changes from field to field.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from attn import _checks
from attn.book.diagram.draw import ATTENTION_COLOURS, INPUT, PLAIN, arrow, box, grid, note

__all__ = ["one_mechanism", "token_counts"]


def token_counts(*, words=("the", "cat", "sat"), image_size: int = 8, patch_size: int = 4,
                 frames: int = 5) -> dict[str, int]:
    """The sequence length ``n`` of each input kind the figure draws: one token per word,
    ``(image_size / patch_size) ** 2`` patches, one token per audio frame."""
    words = [str(w) for w in words]
    if not words:
        raise ValueError("words: need at least one word, got none")
    _checks.positive_int("image_size", image_size)
    _checks.positive_int("patch_size", patch_size)
    side = _checks.divisible("image_size", image_size, patch_size, by_name="patch_size")
    _checks.positive_int("frames", frames)
    return {"words": len(words), "image patches": side * side, "audio frames": frames}


def one_mechanism(*, words=("the", "cat", "sat"), image_size: int = 8, patch_size: int = 4, frames: int = 5,
                  figsize: tuple[float, float] = (10.0, 4.4)):
    """Three kinds of input turned into tokens and read by one attention layer.

    Args:
        words: the words of the text row (1 to 6 fit).
        image_size: the side of the square image, in pixels.
        patch_size: the side of a square patch; it must divide ``image_size`` (at most 4 patches a side fit).
        frames: the audio frames (1 to 8 fit).
        figsize: the figure size in inches.

    Returns:
        The matplotlib ``Figure`` (one axes): a row per input kind (text, image, audio), each with its
        raw input, its tokens and its length ``n`` (:func:`token_counts`), all joined to one box
        "the same attention" and its output ``(n, D)``.
    """
    counts = token_counts(words=words, image_size=image_size, patch_size=patch_size, frames=frames)
    words = [str(w) for w in words]
    side = image_size // patch_size
    _checks.integer("words", len(words), 1, 6, what=" (the number of words that fit the figure)")
    _checks.integer("frames", frames, 1, 8, what=" (the audio frames that fit the figure)")
    _checks.integer("image_size", side, 1, 4, what=" // patch_size (the patches a side that fit the figure)")
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-0.2, 12.6)
    ax.set_ylim(-0.9, 4.6)
    ax.axis("off")
    rows = {"words": 3.6, "image patches": 2.0, "audio frames": 0.4}
    x_raw, x_tok, x_att, x_out = 1.0, 4.6, 8.9, 11.3
    cell = 0.3
    # text: the words themselves are the tokens
    y = rows["words"]
    ax.text(x_raw, y, " ".join(words), ha="center", va="center", fontsize=8, family="monospace")
    # image: a square of patches, each patch one token
    y = rows["image patches"]
    top = y + side * cell / 2
    grid(ax, x_raw - side * cell / 2, top, side, side, [["#cfd8e3"] * side for _ in range(side)], cell=cell,
         texts=[[str(r * side + c + 1) for c in range(side)] for r in range(side)], fontsize=6.5)
    ax.text(x_raw, top - side * cell - 0.08, f"{image_size}×{image_size} px, {patch_size}×{patch_size} patches",
            ha="center", va="top", fontsize=6.5, color="#555555")
    # audio: a wave cut into frames
    y = rows["audio frames"]
    xs = [x_raw - 0.9 + 1.8 * i / 200 for i in range(201)]
    ax.plot(xs, [y + 0.25 * math.sin(18 * (x - xs[0])) * math.sin(2.2 * (x - xs[0])) for x in xs], color="#555555",
            lw=0.8)
    for f in range(1, frames):
        xf = x_raw - 0.9 + 1.8 * f / frames
        ax.plot([xf, xf], [y - 0.3, y + 0.3], color="#999999", lw=0.6, ls=":")
    labels = {"words": words, "image patches": [f"p{i + 1}" for i in range(counts["image patches"])],
              "audio frames": [f"f{i + 1}" for i in range(frames)]}
    for kind, y in rows.items():
        ax.text(-0.15, y + 0.55, kind, fontsize=7.5, fontweight="bold", va="center")
        n = counts[kind]
        w = min(0.62, 3.2 / n)
        for i, label in enumerate(labels[kind]):
            box(ax, x_tok - n * w / 2 + w * (i + 0.5), y, label, INPUT, small=True, w=w - 0.06, h=0.36,
                fontsize=6.5 if n > 6 else 7)
        ax.text(x_tok, y - 0.35, f"n = {n} tokens, one vector each: (n, D)", ha="center", va="top", fontsize=7)
        arrow(ax, (x_raw + 1.05, y), (x_tok - n * w / 2 - 0.1, y))
        arrow(ax, (x_tok + n * w / 2 + 0.1, y), (x_att - 1.05, rows["image patches"] + 0.2 * (y - rows["image patches"])))
    box(ax, x_att, rows["image patches"], "the same attention\nsoftmax(Q K^T / √E) V", ATTENTION_COLOURS[
        "encoder self-attention"], w=2.0, h=0.8, bold=True)
    box(ax, x_out, rows["image patches"], "output\n(n, D)", PLAIN, w=1.3, h=0.7)
    arrow(ax, (x_att + 1.0, rows["image patches"]), (x_out - 0.65, rows["image patches"]))
    note(ax, x_att, rows["image patches"] - 0.75, "scores: an n × n matrix\nper head and layer", ha="center")
    ax.text(x_raw, -0.7, "input", ha="center", fontsize=7.5, color="#555555", style="italic")
    ax.text(x_tok, -0.7, "tokens", ha="center", fontsize=7.5, color="#555555", style="italic")
    ax.set_title("One mechanism, many kinds of token: only what a token is, and so n, changes", fontsize=9.5)
    return fig
