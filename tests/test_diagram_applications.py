"""The idea figure of "Where attention is used": words, image patches and audio frames become tokens
that one attention layer reads; the token counts drawn are the ones computed."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn.book.diagram import ATTENTION_COLOURS  # noqa: E402
from attn.book.diagram.applications import one_mechanism, token_counts  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_token_counts_follow_the_input_formats():
    assert token_counts() == {"words": 3, "image patches": 4, "audio frames": 5}
    assert token_counts(image_size=8, patch_size=2)["image patches"] == 16  # the ViT of model_variants


@pytest.mark.parametrize("kwargs", [{}, {"words": ("a", "b"), "image_size": 6, "patch_size": 2, "frames": 8}])
def test_figure_draws_each_kind_its_tokens_and_one_attention(kwargs):
    fig = one_mechanism(**kwargs)
    texts = _texts(fig)
    counts = token_counts(**kwargs)
    for kind, n in counts.items():
        assert kind in texts
        assert f"n = {n} tokens, one vector each: (n, D)" in texts
    assert [t for t in texts if t.startswith("p") and t[1:].isdigit()] == \
        [f"p{i + 1}" for i in range(counts["image patches"])]
    assert [t for t in texts if t.startswith("f") and t[1:].isdigit()] == \
        [f"f{i + 1}" for i in range(counts["audio frames"])]
    assert sum("the same attention" in t for t in texts) == 1
    face = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert ATTENTION_COLOURS["encoder self-attention"] in face
    plt.close(fig)


@pytest.mark.parametrize(("kwargs", "name"), [({"patch_size": 3}, "image_size"), ({"frames": 0}, "frames"),
                                             ({"words": ()}, "words"), ({"image_size": -8}, "image_size"),
                                             ({"frames": 9}, "frames")])
def test_bad_input_is_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        one_mechanism(**kwargs)
