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


# --- cross-attention and positional figures -------------------------------------------------------
from attn.diagram import encoder_decoder  # noqa: E402


def _box_of(fig, words: str):
    """The patch (box) whose centre is nearest the text that contains `words`."""
    text = next(t for t in fig.findobj(Text) if words in t.get_text())
    x, y = text.get_position()
    boxes = [p for p in fig.axes[0].patches if isinstance(p, matplotlib.patches.FancyBboxPatch)]
    return min(boxes, key=lambda p: abs(p.get_x() + p.get_width() / 2 - x) + abs(p.get_y() + p.get_height() / 2 - y))


def test_encoder_decoder_draws_the_wiring_with_the_tokens_given():
    fig = encoder_decoder(["der", "Hund"], ["<s>", "the", "dog"])
    texts = "\n".join(_texts(fig))
    for label in ("memory M", "encoder stack", "masked self-attention", "cross-attention", "feed-forward",
                  "logits", "Q from the decoder, K, V from M", "LayerNorm", "residual"):
        assert label in texts, label
    assert {"der", "Hund", "<s>", "the", "dog"} <= set(_texts(fig))
    assert "S = 2" in texts and "L = 3" in texts
    shapes = re.findall(r"\(([A-Z0-9, ]+)\)", texts)
    assert {"B, S, D", "B, L, D", "B, H, L, S", "B, L, V"} <= set(shapes)
    assert {x.strip() for s in shapes for x in s.split(",")} <= set(attn.SHAPE_LEGEND) | {"V"}
    assert matplotlib.colors.to_hex(_box_of(fig, "Q from the decoder").get_facecolor()) == \
        ATTENTION_COLOURS["cross-attention"]
    plt.close(fig)


def test_encoder_decoder_arrows_carry_memory_and_queries_into_cross_attention():
    fig = encoder_decoder()
    arrows = {a.get_gid(): a for a in fig.axes[0].patches if a.get_gid()}
    memory, cross = _box_of(fig, "memory M"), _box_of(fig, "Q from the decoder")
    masked = _box_of(fig, "masked self-attention")
    fig.canvas.draw()

    def touches(arrow, box, slack=0.15):  # some point of the arrow's path (data units) at the box
        return any(box.get_x() - slack <= x <= box.get_x() + box.get_width() + slack
                   and box.get_y() - slack <= y <= box.get_y() + box.get_height() + slack
                   for x, y in arrow.get_path().vertices)

    to_cross, queries = arrows["memory-to-cross"], arrows["decoder-to-cross"]
    assert touches(to_cross, memory) and touches(to_cross, cross) and not touches(to_cross, masked)
    assert touches(queries, masked) and touches(queries, cross) and not touches(queries, memory)
    plt.close(fig)


def test_encoder_decoder_names_an_empty_side():
    import pytest

    with pytest.raises(ValueError, match="source and target"):
        encoder_decoder([], ["<s>"])
