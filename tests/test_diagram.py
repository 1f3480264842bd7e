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


# --- efficient figures -------------------------------------------------------------------------------
import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from attn.diagram import tiled_pass  # noqa: E402

_SCORES, _VALUES = (1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0, 2.0), (2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 0.0, 4.0)


def test_tiled_pass_labels_every_block_and_ends_at_the_softmax_over_all_keys():
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    texts = "\n".join(_texts(fig))
    assert [f"block {b}" in texts for b in range(1, 6)] == [True] * 4 + [False]
    assert all(f"key {j}" in texts for j in range(1, 9))
    # the oracle: torch's softmax over all eight keys at once
    exact = float(torch.softmax(torch.tensor(_SCORES), 0) @ torch.tensor(_VALUES))
    assert texts.count(f"{exact:.3f}") == 2  # a / ℓ after the last block, and the direct softmax
    assert "m = 5.00" in texts and "ℓ" in texts and "a / ℓ" in texts
    plt.close(fig)


def test_tiled_pass_shows_the_rescale_only_where_the_running_max_rises():
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    texts = _texts(fig)
    rose = [t for t in texts if "max rose" in t]
    assert len(rose) == 1 and f"{math.exp(3 - 5):.2f}" in rose[0]  # block 3: max 3 -> 5
    assert "m = 5.00" in rose[0] and sum("max kept" in t for t in texts) == 2
    # the running sum after block 2 is the softmax normaliser of keys 1-4 under their max
    ell2 = sum(math.exp(s - 3) for s in _SCORES[:4])
    assert any(f"= {ell2:.2f}" in t and "m = 3.00" in t for t in texts)
    plt.close(fig)


def test_tiled_pass_takes_any_block_size_and_refuses_bad_input_by_name():
    fig = tiled_pass(_SCORES, _VALUES, block_size=3)  # blocks of 3, 3, 2
    texts = "\n".join(_texts(fig))
    assert "block 3" in texts and "block 4" not in texts
    plt.close(fig)
    with pytest.raises(ValueError, match=r"8 scores and 7 values"):
        tiled_pass(_SCORES, _VALUES[:7])
    with pytest.raises(ValueError, match=r"block_size must be a positive integer, got 0"):
        tiled_pass(_SCORES, _VALUES, block_size=0)
