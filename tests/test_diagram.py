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
