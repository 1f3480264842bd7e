"""The idea figure of "Model variants": the attention patterns of BERT, GPT and T5 on the worked
example, drawn from the masks attn.masks computes."""

import re

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn import masks  # noqa: E402
from attn.book.diagram.draw import ATTENTION_COLOURS  # noqa: E402
from attn.book.diagram.model_variants import attention_patterns, patterns  # noqa: E402

SOURCE, TARGET = ("the", "cat", "sat"), ("<s>", "le", "chat")


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_the_three_families_and_five_attentions_are_named():
    fig = attention_patterns()
    joined = "\n".join(_texts(fig))
    for text in ("BERT (encoder-only)", "GPT (decoder-only)", "T5 (encoder-decoder)", "the cat sat",
                 "encoder self-attention", "decoder causal self-attention", "cross-attention"):
        assert text in joined
    plt.close(fig)


def test_the_patterns_are_the_masks_of_attn_masks():
    drawn = {k: v[0] for k, v in patterns(SOURCE, TARGET).items()}
    assert drawn["BERT: encoder self-attention (S, S)"].all()
    assert torch.equal(drawn["GPT: causal self-attention (L, L)"], masks.causal(3))
    assert torch.equal(drawn["T5 decoder: decoder causal self-attention (L, L)"], masks.causal(3))
    cross = patterns(SOURCE, ("<s>", "a", "b", "c"))["T5 decoder: cross-attention (L, S)"][0]
    assert cross.shape == (4, 3) and cross.all()


def test_cells_show_the_mask_as_ones_and_zeros_coloured_by_the_kind_of_attention():
    fig = attention_patterns(SOURCE, TARGET)
    ax = fig.axes[0]
    cells = [p for p in ax.patches if isinstance(p, Rectangle)]
    expected = [v for m, _, _, _ in patterns(SOURCE, TARGET).values() for v in m.flatten().tolist()]
    assert len(cells) == len(expected) == 5 * 9
    shown = [t.get_text() for t in ax.texts if t.get_text() in ("0", "1")]
    assert shown == ["1" if v else "0" for v in expected]
    colours = {matplotlib.colors.to_hex(c.get_facecolor()) for c, v in zip(cells, expected, strict=True) if v}
    assert colours == set(ATTENTION_COLOURS.values())
    assert all(matplotlib.colors.to_hex(c.get_facecolor()) == "#ffffff"
               for c, v in zip(cells, expected, strict=True) if not v)
    plt.close(fig)


def test_shape_labels_use_only_the_books_legend_letters():
    fig = attention_patterns()
    for text in _texts(fig):
        for shape in re.findall(r"\(([A-Z](?:, [A-Z])*)\)", text):
            assert set(shape.replace(", ", "")) <= set("BHLSED"), (shape, text)
    plt.close(fig)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="source: need 1 to 6 tokens"):
        attention_patterns(source=[])
    with pytest.raises(ValueError, match="target: need 1 to 6 tokens"):
        attention_patterns(target=list("abcdefg"))
