"""The idea figure of "Why attention": an RNN's chain of states against attention's one hop, with the
hop counts it draws equal to the path lengths computed on the same graph."""

import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn.book import why_attention as chapter  # noqa: E402
from attn.book.diagram.why_attention import chain_vs_hop  # noqa: E402


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.findobj(Text) if t.get_text()]


def test_recurrence_path_grows_with_distance_attention_path_is_one_hop():
    assert chapter.hops(4, "rnn") == [4, 3, 2, 1]
    assert chapter.hops(4, "attention") == [1, 1, 1, 1]
    for n in range(1, 9):  # the path-length column of Vaswani et al.'s Table 1: n and 1
        assert max(chapter.hops(n, "rnn")) == n and max(chapter.hops(n, "attention")) == 1


def test_reading_graph_has_a_chain_for_the_rnn_and_all_pairs_for_attention():
    assert chapter.reading_graph(3, "rnn") == [("x1", "h1"), ("x2", "h2"), ("x3", "h3"), ("h1", "h2"), ("h2", "h3")]
    assert len(chapter.reading_graph(3, "attention")) == 9


@pytest.mark.parametrize("tokens", [("the", "cat", "sat", "down"), ("a", "b"), tuple("abcdef")])
def test_figure_shows_every_token_and_the_hops_the_graph_gives(tokens):
    fig = chain_vs_hop(tokens)
    rnn, att = fig.axes
    n = len(tokens)
    assert rnn.get_title() == "RNN: one step after another" and att.get_title() == "attention: one hop"
    for ax, kind in ((rnn, "rnn"), (att, "attention")):
        texts = _texts(ax)
        for j, tok in enumerate(tokens):
            assert f"x{j + 1}  {tok}" in texts
        drawn = [t for t in texts if re.fullmatch(r"\d+ hops?", t)]
        assert [int(t.split()[0]) for t in drawn] == chapter.hops(n, kind)
    assert [f"h{t}" for t in range(1, n + 1)] == [t for t in _texts(rnn) if t.startswith("h") and t[1:].isdigit()]
    assert [f"z{t}" for t in range(1, n + 1)] == [t for t in _texts(att) if t.startswith("z") and t[1:].isdigit()]
    assert len(att.patches) >= 2 * n  # n token boxes, n outputs, and an arrow per token
    plt.close(fig)


@pytest.mark.parametrize("tokens", [("one",), tuple("abcdefg")])
def test_figure_names_the_bad_argument(tokens):
    with pytest.raises(ValueError, match="tokens"):
        chain_vs_hop(tokens)


def test_unknown_kind_and_bad_length_are_named():
    with pytest.raises(ValueError, match="kind"):
        chapter.hops(3, "convolution")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        chapter.reading_graph(0, "rnn")
