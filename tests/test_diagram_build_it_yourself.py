"""The idea figure of "Build it yourself": the tiny GPT, its shapes and its parameter counts, the
counts taken from attn.variants.GPT of the same sizes."""

import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn.book.diagram.build_it_yourself import parameter_counts, tiny_gpt  # noqa: E402
from attn.variants import GPT  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_the_path_from_ids_to_logits_is_drawn_with_its_shapes():
    fig = tiny_gpt()
    joined = "\n".join(_texts(fig))
    for part in ("token ids", "W_E[ids] + W_P[positions]", "LN_1", "causal MultiHead, H = 4", "LN_2",
                 "FFN: Linear, GELU, Linear", "final LN", "head: LN(h) W_E^T  (tied)", "logits",
                 "pre-LN block  x N = 2", "x + MultiHead(LN_1(x))", "x + FFN(LN_2(x))", "residual path"):
        assert part in joined, part
    assert "(B, L) integers" in joined and "(B, L, |V|), |V| = 48" in joined
    assert joined.count("(B, L, D)") == 3
    plt.close(fig)


def test_every_shape_label_uses_only_the_books_legend_letters():
    fig = tiny_gpt()
    for text in _texts(fig):
        for shape in re.findall(r"\(([A-Z|]+(?:, [A-Z|]+)*)\)", text):
            assert set(shape.replace(", ", "").replace("|V|", "")) <= set("BHLSED"), (shape, text)
    plt.close(fig)


def test_the_parameter_counts_drawn_are_the_package_models():
    sizes = dict(vocab_size=48, d_model=64, num_heads=4, num_layers=2, max_len=32)
    n = parameter_counts(**sizes)
    model = GPT(sizes["vocab_size"], 64, 4, 2, max_len=32)
    total = sum(p.numel() for p in model.parameters())
    assert n["embeddings"] + sizes["num_layers"] * n["block"] + n["final LN"] + n["head"] == total
    D = 64
    assert n["block"] == 12 * D**2 + 13 * D and n["embeddings"] == (48 + 32) * D and n["head"] == 0
    joined = "\n".join(_texts(tiny_gpt(**sizes)))
    assert f"{n['embeddings']:,} parameters" in joined and f"{n['block']:,} parameters per block" in joined
    assert f"{n['final LN']:,} parameters" in joined
    other = "\n".join(_texts(tiny_gpt(vocab_size=10, d_model=32, num_heads=2, num_layers=3, max_len=8)))
    assert "x N = 3" in other and "H = 2" in other and "|V| = 10" in other
    assert f"{parameter_counts(10, 32, 2, 3, 8)['block']:,} parameters per block" in other
    plt.close("all")


@pytest.mark.parametrize(("kwargs", "name"), [
    (dict(vocab_size=0), "vocab_size"), (dict(d_model=63), "d_model"), (dict(num_heads=0), "num_heads"),
    (dict(num_layers=0), "num_layers"), (dict(max_len=-1), "max_len"), (dict(tokens_shown=()), "tokens_shown"),
])
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        tiny_gpt(**kwargs)
