"""The idea figure of "Positional encodings": the three places a position enters, drawn with numbers
that attn.positional computes."""

import math
import re

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn import positional  # noqa: E402
from attn.book.diagram.positional_encodings import where_positions  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_the_three_places_are_named_each_in_a_panel_of_its_own():
    fig = where_positions()
    joined = "\n".join(_texts(fig))
    for title in ("1. added to x", "2. rotating q and k", "3. biasing the scores"):
        assert title in joined
    assert "W_P" in joined and "RoPE" in joined and "ALiBi" in joined and "T5" in joined
    assert "softmax(Q K^T / √E + b) V" in joined
    plt.close(fig)


def test_every_shape_label_uses_only_the_books_legend_letters():
    fig = where_positions()
    for text in _texts(fig):
        for shape in re.findall(r"\(([A-Z](?:, [A-Z])*)\)", text):
            assert set(shape.replace(", ", "")) <= set("BHLSED"), (shape, text)
    plt.close(fig)


def test_rope_arrows_are_the_vectors_attn_rotates_and_the_score_depends_on_the_offset():
    pairs = ((2, 1), (5, 4))
    fig = where_positions(pairs=pairs)
    arrows = {p.get_gid(): p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("rope-")}
    rope = positional.RotaryPositionalEncoding(2)
    one = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    for i, j in pairs:
        for gid, pos in ((f"rope-q-{i}", i), (f"rope-k-{j}", j)):
            (x0, y0), (x1, y1) = arrows[gid]._posA_posB
            turned = rope.rotate(one, offset=pos)[0]
            assert math.atan2(y1 - y0, x1 - x0) == pytest.approx(math.atan2(turned[1], turned[0]), abs=1e-9)
    texts = _texts(fig)
    score = math.cos(1.0)  # (R_i q) . (R_j k) = q . R_{j-i} k = cos((i - j) theta), theta = 1
    for i, j in pairs:
        assert any(f"q_{i} · k_{j} = {score:.2f}" in t for t in texts)
    plt.close(fig)


def test_input_code_and_alibi_biases_are_the_numbers_attn_computes():
    toks = ["a", "b", "c", "d"]
    fig = where_positions(tokens_shown=toks, num_heads=8)
    texts = _texts(fig)
    code = positional.sinusoidal_table(4, 4)[3].tolist()
    assert any("[" + ", ".join(f"{v:.2f}" for v in code) + "]" in t for t in texts)
    bias = positional.ALiBi(8).score_bias(torch.zeros(1, 8, 4, 2), 0, 4)[0, 0]  # (L, S), head 1
    shown = [t for t in texts if t == "0" or t.startswith("-0.") or t.startswith("-1.")]
    assert shown == ["0" if b == 0 else f"{b:.2f}" for b in bias.flatten().tolist()]
    assert any(f"m = {positional.ALiBi(8).slopes[0].item():g}" in t for t in texts)
    plt.close(fig)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="tokens_shown"):
        where_positions(tokens_shown=[])
    with pytest.raises(ValueError, match="pairs"):
        where_positions(pairs=((1, 2), (3, 4), (5, 6)))
    with pytest.raises(ValueError, match="pairs must be a non-negative integer"):
        where_positions(pairs=((-1, 0),))
    with pytest.raises(ValueError, match="num_heads must be a positive integer, got 0"):
        where_positions(num_heads=0)
