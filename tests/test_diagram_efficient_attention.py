"""The idea figures of "Efficient attention": key/value heads shared by groups of query heads, and the
sparse patterns drawn from the masks attn.masks computes."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn import efficient, masks  # noqa: E402
from attn.book.diagram.efficient_attention import (  # noqa: E402
    PATTERN_COLOURS,
    head_sharing,
    kv_head_of,
    sparse_patterns,
)


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_kv_head_of_is_the_sharing_grouped_query_attention_computes():
    torch.manual_seed(0)
    H, H_kv, E = 8, 2, 4
    layer = efficient.GroupedQueryAttention(H * E, H, num_kv_heads=H_kv)
    with torch.no_grad():  # each value head a constant, its own index: read which one a query head got
        layer.kv_proj.weight.zero_()  # (2 * H_kv * E, D): keys first, then values
        values = torch.arange(H_kv).repeat_interleave(E).float()  # (H_kv * E,)
        layer.kv_proj.bias.copy_(torch.cat([torch.zeros(H_kv * E), values]))
        layer.out_proj.weight.copy_(torch.eye(H * E))
        layer.out_proj.bias.zero_()
        out = layer(torch.randn(1, 3, H * E))[0]  # (1, 3, D)
    read = out[0, 0].reshape(H, E)[:, 0].round().long().tolist()
    assert kv_head_of(H, H_kv) == read == [0, 0, 0, 0, 1, 1, 1, 1]


def test_each_query_head_points_at_the_kv_head_it_shares():
    fig = head_sharing(8, (8, 2, 1))
    shares = {p.get_gid() for p in fig.axes[0].patches if (p.get_gid() or "").startswith("share-")}
    expected = {f"share-{p}-{h}-{g}" for p, h_kv in enumerate((8, 2, 1))
                for h, g in enumerate(kv_head_of(8, h_kv))}
    assert shares == expected
    texts = "\n".join(_texts(fig))
    for name in ("multi-head", "grouped-query", "multi-query", "H_kv = 2", "k,v 2", "q8"):
        assert name in texts
    assert "KV cache: 2/8 of multi-head" in texts
    plt.close(fig)


def test_every_cell_of_the_patterns_is_the_mask_attn_builds():
    L, w, g, r = 12, 2, (0, 6), 2
    fig = sparse_patterns(L, window=w, global_tokens=g, num_random=r, seed=1)
    ax = fig.axes[0]
    cells = [p for p in ax.patches if type(p).__name__ == "Rectangle"]
    assert len(cells) == 3 * L * L
    blocked = matplotlib.colors.to_rgba(PATTERN_COLOURS["blocked"])
    for k, keep in enumerate((masks.sliding_window(L, window=w),
                              masks.local_global(L, window=w, global_tokens=g),
                              masks.bigbird(L, window=w, global_tokens=g, num_random=r, seed=1))):
        drawn = torch.tensor([c.get_facecolor() != pytest.approx(blocked) for c in cells[k * L * L:(k + 1) * L * L]])
        assert torch.equal(drawn.reshape(L, L), keep)
        assert f"{int(keep.sum())} of {L * L} pairs allowed" in _texts(fig)
    # the window's cells carry the window's colour, a global row the global colour
    assert cells[0].get_facecolor() == pytest.approx(matplotlib.colors.to_rgba(PATTERN_COLOURS["window"]))
    assert cells[L * L + L - 1].get_facecolor() == pytest.approx(matplotlib.colors.to_rgba(PATTERN_COLOURS["global"]))
    texts = _texts(fig)
    for title in ("sliding window", "+ global tokens (Longformer)", "+ random keys (BigBird)"):
        assert title in texts
    plt.close(fig)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="num_kv_heads"):
        head_sharing(8, (3,))
    with pytest.raises(ValueError, match="kv_heads"):
        head_sharing(8, ())
    with pytest.raises(ValueError, match="num_heads"):
        kv_head_of(0, 1)
    with pytest.raises(ValueError, match="window"):
        sparse_patterns(8, window=0)
    with pytest.raises(ValueError, match="global_tokens"):
        sparse_patterns(8, global_tokens=(9,))
    with pytest.raises(ValueError, match="length"):
        sparse_patterns(0)
