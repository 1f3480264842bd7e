"""The idea figure of "Induction heads": the circuit drawn on a sequence, the induction head attending
to the token after the earlier occurrence of the last token, and copying it."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn.book.diagram.induction_heads import (  # noqa: E402
    INDUCTION,
    PREVIOUS,
    induction_circuit,
    induction_target,
)


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _gids(fig) -> dict[str, object]:
    return {p.get_gid(): p for p in fig.axes[0].patches if p.get_gid()}


def test_the_target_is_one_past_the_most_recent_earlier_occurrence():
    assert induction_target(["q", "x", "m", "q"]) == (0, 1)
    assert induction_target(list("abcabcab")) == (4, 5)  # the most recent "b", then "c"


def test_the_figure_names_both_heads_the_written_key_and_the_copied_prediction():
    fig = induction_circuit(["q", "x", "m", "q"])
    texts = "\n".join(_texts(fig))
    assert "previous-token" in texts and "induction" in texts
    assert "x\npreceded by q" in texts  # what layer 1 writes at x's position
    assert "query: q" in texts and "next: x" in texts  # layer 2 queries with q and copies x
    assert "K-composition" in texts
    for position in range(4):
        assert str(position) in _texts(fig)
    plt.close(fig)


@pytest.mark.parametrize("tokens", [["q", "x", "m", "q"], list("abcdefgab"), list("kzzk")])
def test_the_arrows_drawn_are_the_attention_the_circuit_computes(tokens):
    earlier, target = induction_target(tokens)
    last = len(tokens) - 1
    fig = induction_circuit(tokens)
    gids = _gids(fig)
    # layer 1: one arrow per query i >= 1, to key i - 1; the one into the copied token in the head's colour
    previous = sorted(g for g in gids if g.startswith("previous-"))
    assert previous == sorted(f"previous-{i}" for i in range(1, len(tokens)))
    bold = [g for g in previous if matplotlib.colors.to_hex(gids[g].get_edgecolor()) == PREVIOUS]
    assert bold == [f"previous-{target}"]
    # layer 2: one arrow, from the last position to the one after the earlier occurrence
    induction = [g for g in gids if g.startswith("induction-")]
    assert induction == [f"induction-{last}-{earlier + 1}"]
    assert matplotlib.colors.to_hex(gids[induction[0]].get_edgecolor()) == INDUCTION
    assert f"next: {tokens[target]}" in _texts(fig)
    plt.close(fig)


@pytest.mark.parametrize("tokens", [["a", "b"], list("abcdefghijk"), ["a", "b", "c"], ["a", "b", "b"]])
def test_a_sequence_without_an_earlier_occurrence_to_copy_after_is_named(tokens):
    with pytest.raises(ValueError, match="tokens"):
        induction_circuit(tokens)
