"""The whole-Transformer diagram: drawn from code, labelled in the book's shape legend, with the three
attentions, the masks and the positions where the architecture puts them."""

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import attn  # noqa: E402
from attn.diagram import ATTENTION_COLOURS, transformer_diagram  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_diagram_names_the_three_attentions_each_in_a_box_of_its_colour():
    fig = transformer_diagram()
    texts = "\n".join(_texts(fig))
    assert "encoder self-attention" in texts and "masked self-attention" in texts and "cross-attention" in texts
    face = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert set(ATTENTION_COLOURS.values()) <= face
    plt.close(fig)


def test_every_shape_label_uses_only_the_books_legend_letters():
    fig = transformer_diagram()
    shapes = re.findall(r"\(([A-Z0-9, ]+)\)", "\n".join(_texts(fig)))
    assert len(shapes) >= 10
    letters = {x.strip() for s in shapes for x in s.split(",")}
    allowed = set(attn.SHAPE_LEGEND) | {"V", "1"}  # V: vocabulary size, written out in the figure's key
    assert letters <= allowed, letters - allowed
    # encoder side in S, decoder side in L, cross-attention weights (B, H, L, S)
    assert {"B, S, D", "B, L, D", "B, H, L, S", "L, L", "B, 1, 1, S"} <= set(shapes)
    plt.close(fig)


def test_diagram_shows_masks_positions_and_the_memory_feeding_cross_attention():
    fig = transformer_diagram(num_layers="6")
    texts = "\n".join(_texts(fig))
    assert "causal mask" in texts and "padding mask" in texts
    assert texts.count("positional encoding") == 2  # one per stack
    assert "memory" in texts and "K, V" in texts
    assert texts.count("× 6") == 2  # the repeat count reaches both stacks
    plt.close(fig)


# --- multi-head and causal figures ----------------------------------------------------------------
import pytest  # noqa: E402

from attn.diagram import head_split, kv_cache_loop, mask_before_softmax  # noqa: E402


def test_head_split_labels_every_shape_and_colours_each_heads_columns_alike():
    fig = head_split(d_model=6, num_heads=3, tokens=["a", "b"])
    texts = "\n".join(_texts(fig))
    for label in ("(B, L, D)", "(B, H, L, E)", "(D, D)", "E = D / H = 2", "head 1", "head 3", "Concat"):
        assert label in texts, label
    assert "head 4" not in texts
    cells = [p for p in fig.axes[0].patches if type(p).__name__ == "Rectangle"]  # arrows are patches too
    assert len(set(matplotlib.colors.to_hex(p.get_facecolor()) for p in cells) - {"#e9eef5"}) == 3  # one per head
    # Q (2x6), three heads (2x2 each), Concat (2x6), W_O (6x6), output (2x6)
    assert len(cells) == 12 + 12 + 12 + 36 + 12
    plt.close(fig)


def test_head_split_refuses_a_head_count_that_does_not_divide_the_width():
    with pytest.raises(ValueError, match="num_heads=3 must divide d_model=4"):
        head_split(d_model=4, num_heads=3)


def test_mask_before_softmax_blocks_exactly_the_upper_triangle_and_zeroes_its_weights():
    fig = mask_before_softmax(tokens=["x", "y", "z", "w"])
    texts = _texts(fig)
    n = 4
    assert texts.count("-∞") == 2 * n * (n - 1) // 2  # in the mask and in scores + M
    assert sum(t.startswith("a") and len(t) == 3 for t in texts) == n * (n + 1) // 2  # weights left
    joined = "\n".join(texts)
    assert "BEFORE the softmax" in joined and "Wrong order" in joined and "softmax" in joined
    plt.close(fig)


def test_kv_cache_loop_grows_the_cache_by_one_row_per_step():
    fig = kv_cache_loop(prompt_len=3, steps=2)
    texts = _texts(fig)
    assert [t for t in texts if t.startswith("S = ")] == ["S = 3", "S = 4", "S = 5"]
    assert texts.count("kv1") == 3 and texts.count("kv5") == 1
    assert "prompt, L = P = 3" in texts and "step 2, L = 1" in texts
    assert any("next token x6" in t for t in texts)
    with pytest.raises(ValueError, match="steps=0"):
        kv_cache_loop(steps=0)
    plt.close(fig)
