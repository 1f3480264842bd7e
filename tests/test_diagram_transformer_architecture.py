"""The idea figure of "The Transformer architecture": a post-LN block beside a pre-LN block, with
LayerNorm in the place each formula puts it and the residual paths around the sub-layers."""

import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn.book.diagram.transformer_architecture import pre_post_ln  # noqa: E402

MIDDLE = 5.7  # the x that separates the two panels


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_text()]


def _stack(fig, left: bool) -> list[str]:
    """The box labels of one panel, from the bottom up (first line of each)."""
    ax = fig.axes[0]
    boxes = [t for t in ax.texts if t.get_text() and (t.get_position()[0] < MIDDLE) == left
             and t.get_ha() == "center" and t.get_fontsize() == 7.5 and "(B, L, D)" in t.get_text()]
    return [t.get_text().split("\n")[0] for t in sorted(boxes, key=lambda t: t.get_position()[1])]


def test_both_panels_are_titled_with_their_formula():
    fig = pre_post_ln()
    joined = "\n".join(t.get_text() for t in _texts(fig))
    for text in ("post-LN (original Transformer)", "pre-LN (GPT-2 and most models since)",
                 "x ← LN(x + Sublayer(x))", "x ← x + Sublayer(LN(x))", "residual\npaths"):
        assert text in joined
    plt.close(fig)


def test_layernorm_sits_after_each_addition_in_post_ln_and_before_each_sublayer_in_pre_ln():
    fig = pre_post_ln()
    post = _stack(fig, left=True)
    pre = _stack(fig, left=False)
    assert [s.split("  ")[0] for s in post] == ["x", "self-attention", "LayerNorm", "feed-forward", "LayerNorm"]
    assert [s.split("  ")[0] for s in pre] == ["x", "LayerNorm", "self-attention", "LayerNorm", "feed-forward",
                                               "final LayerNorm, once"]
    adds = [p for p in fig.axes[0].patches if isinstance(p, Circle)]
    assert len(adds) == 4  # one addition per sub-layer, two per block
    plt.close(fig)


def test_shape_labels_use_only_the_books_legend_letters_and_the_widths_drawn_are_the_arguments():
    fig = pre_post_ln(d_model=8, d_ff=32)
    texts = [t.get_text() for t in _texts(fig)]
    for text in texts:
        for shape in re.findall(r"\(([A-Z](?:, [A-Z])*)\)", text):
            assert set(shape.replace(", ", "")) <= set("BLD"), (shape, text)
    assert sum("D = 8, F = 32" in t for t in texts) == 2
    assert sum("D → F → D" in t for t in texts) == 2
    plt.close(fig)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d_model must be a positive integer, got 0"):
        pre_post_ln(d_model=0)
    with pytest.raises(ValueError, match="d_ff must be a positive integer, got 2.5"):
        pre_post_ln(d_ff=2.5)
