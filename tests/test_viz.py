"""attn.book.viz: figures that read well (annotation contrast) and clear errors."""

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.colors import to_rgb

from attn.book import viz


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.mark.parametrize("cmap", ["viridis", "viridis_r", "Greys", "magma", "coolwarm"])
def test_annotation_text_is_dark_on_light_cells_and_light_on_dark_cells(cmap):
    m = torch.linspace(0, 1, 12).reshape(3, 4)
    fig = viz.heatmap(m, annotate=True, cmap=cmap, vmin=0.0, vmax=1.0)
    ax = fig.axes[0]
    im = ax.images[0]
    assert len(ax.texts) == 12
    for text in ax.texts:
        j, i = (round(c) for c in text.get_position())
        cell = _luminance(im.cmap(im.norm(m[i, j].item())))
        ink = _luminance(text.get_color())
        other = 1.0 - round(ink)  # the other choice: white (1) for black ink, black (0) for white ink
        assert _contrast(ink, cell) >= _contrast(other, cell), (cmap, i, j, text.get_color())
    plt.close(fig)


def test_dark_and_light_ends_of_viridis_get_white_and_black_text():
    fig = viz.heatmap(torch.tensor([[0.0, 1.0]]), annotate=True, vmin=0.0, vmax=1.0)
    colours = [to_rgb(t.get_color()) for t in fig.axes[0].texts]
    assert colours == [(1.0, 1.0, 1.0), (0.0, 0.0, 0.0)]  # dark purple cell: white; yellow cell: black
    plt.close(fig)


def test_results_show_named_values_as_aligned_lines_and_as_a_two_column_table():
    r = viz.Results({"row sums": torch.tensor([1.0, 0.5]), "largest weight": torch.tensor(0.25)},
                    same=True, tokens_seen=3)
    assert repr(r).splitlines() == [
        "row sums:       [1.000, 0.500]",
        "largest weight: 0.250",
        "same:           True",
        "tokens seen:    3",
    ]
    html = r._repr_html_()
    assert html.count("<tr>") == 4 and '<th scope="row">tokens seen</th><td>3</td>' in html
    assert viz.Results({"shape": (2, 3), "a<b": "x&y"}, floatfmt=".1f")._repr_html_().count("&lt;") == 1
    assert repr(viz.Results(w=[[0.5, 0.25]], floatfmt=".2f")) == "w: [[0.50, 0.25]]"


def test_results_without_any_value_is_refused():
    with pytest.raises(ValueError, match="at least one named result"):
        viz.Results()
