"""The whole-Transformer diagram: drawn from code, labelled in the book's shape legend, with the three
attentions, the masks and the positions where the architecture puts them."""

import math
import re

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import attn  # noqa: E402
from attn.book.diagram import (  # noqa: E402
    ATTENTION_COLOURS,
    encoder_decoder,
    head_split,
    kv_cache_loop,
    mask_before_softmax,
    qkv_flow,
    soft_lookup,
    tiled_pass,
    transformer_diagram,
)


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
    shapes = re.findall(r"\(([A-Z0-9,| ]+)\)", "\n".join(_texts(fig)))
    assert len(shapes) >= 10
    letters = {x.strip() for s in shapes for x in s.split(",")}
    allowed = set(attn.SHAPE_LEGEND) | {"|V|", "1"}  # |V|: vocabulary size (V is the values), in the figure's key
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


# --- self-attention figures --------------------------------------------------------------------



def test_soft_lookup_shows_hard_weight_one_on_the_best_key_and_the_soft_mix_of_all_values():
    fig = soft_lookup(["apple", "pear", "lemon"], [3, 4, 1], [0.7, 0.2, 0.1], query="apple?")
    hard, soft = ("\n".join(t.get_text() for t in ax.texts) for ax in fig.axes)
    assert "hard lookup" in fig.axes[0].get_title() and "attention" in fig.axes[1].get_title()
    assert hard.count("w = 1.00") == 1 and hard.count("w = 0.00") == 2
    assert "returns the value of apple: 3" in hard
    assert all(f"w = {w}" in soft for w in ("0.70", "0.20", "0.10"))
    assert "= 3.00" in soft  # 0.7 * 3 + 0.2 * 4 + 0.1 * 1
    assert all(k in soft and k in hard for k in ("apple", "pear", "lemon", "apple?"))
    plt.close(fig)


def test_soft_lookup_rejects_weights_that_are_not_a_distribution():
    with pytest.raises(ValueError, match="sum to 1"):
        soft_lookup(["a", "b"], [1, 2], [0.5, 0.6])
    with pytest.raises(ValueError, match="same length"):
        soft_lookup(["a", "b"], [1, 2], [1.0])


def test_qkv_flow_labels_every_step_with_its_shape_in_the_books_letters():
    tokens = ["the", "cat", "sat"]
    fig = qkv_flow(tokens, query=1, weights=[0.106, 0.106, 0.787])
    texts = "\n".join(_texts(fig))
    for step in ("q = x W_Q", "k = x W_K", "v = x W_V", "q·k / √E", "softmax", "z = Σ a · v"):
        assert step in texts, step
    assert texts.count("k = x W_K") == 3 and texts.count("v = x W_V") == 3  # one key and value per token
    assert "a = 0.787" in texts and texts.count("a = 0.106") == 2
    assert "the output of 'cat'" in texts and "x (cat)" in texts
    shapes = set(re.findall(r"\(([A-Z0-9, ]+)\)", texts))
    assert {"1, D", "1, E", "1, S", "D, E"} <= shapes
    assert {x.strip() for s in shapes for x in s.split(",")} <= set(attn.SHAPE_LEGEND) | {"1"}
    plt.close(fig)


def test_qkv_flow_names_the_bad_argument():
    with pytest.raises(ValueError, match=r"query must lie in \[0, 2\) \(an index of tokens\), got 2"):
        qkv_flow(["a", "b"], query=2)
    with pytest.raises(ValueError, match=r"query must be an integer in \[0, 2\).*got 1.0"):
        qkv_flow(["a", "b"], query=1.0)
    with pytest.raises(ValueError, match="weights"):
        qkv_flow(["a", "b"], weights=[1.0])
# --- efficient figures -------------------------------------------------------------------------------



_SCORES, _VALUES = (1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0, 2.0), (2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 0.0, 4.0)


def test_tiled_pass_labels_every_block_and_ends_at_the_softmax_over_all_keys():
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    texts = "\n".join(_texts(fig))
    assert [f"block {b}" in texts for b in range(1, 6)] == [True] * 4 + [False]
    assert all(f"key {j}" in texts for j in range(1, 9))
    # the oracle: torch's softmax over all eight keys at once
    exact = float(torch.softmax(torch.tensor(_SCORES), 0) @ torch.tensor(_VALUES))
    assert texts.count(f"{exact:.3f}") == 2  # a / ℓ after the last block, and the direct softmax
    assert "m = 5.00" in texts and "ℓ" in texts and "a / ℓ" in texts
    plt.close(fig)


def test_tiled_pass_shows_the_rescale_only_where_the_running_max_rises():
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    texts = _texts(fig)
    rose = [t for t in texts if "max rose" in t]
    assert len(rose) == 1 and f"{math.exp(3 - 5):.2f}" in rose[0]  # block 3: max 3 -> 5
    assert "m = 5.00" in rose[0] and sum("max kept" in t for t in texts) == 2
    # the running sum after block 2 is the softmax normaliser of keys 1-4 under their max
    ell2 = sum(math.exp(s - 3) for s in _SCORES[:4])
    assert any(f"= {ell2:.2f}" in t and "m = 3.00" in t for t in texts)
    plt.close(fig)


def test_tiled_pass_draws_the_state_attn_efficient_computes(monkeypatch):
    from attn.efficient import tiled

    steps = list(tiled.online_softmax_steps(_SCORES, _VALUES, 2))
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    texts = "\n".join(_texts(fig))
    for st in steps:
        assert f"m = {st['m']:.2f}" in texts and f"= {st['ell']:.2f}" in texts and f"= {st['a']:.2f}" in texts
    plt.close(fig)
    # one source of the numbers: the figure draws what the package's update yields
    monkeypatch.setattr(tiled, "online_softmax_steps", lambda *_: iter([{**st, "m": 9.25} for st in steps]))
    fig = tiled_pass(_SCORES, _VALUES, block_size=2)
    assert "m = 9.25" in "\n".join(_texts(fig))
    plt.close(fig)


def test_tiled_pass_takes_any_block_size_and_refuses_bad_input_by_name():
    fig = tiled_pass(_SCORES, _VALUES, block_size=3)  # blocks of 3, 3, 2
    texts = "\n".join(_texts(fig))
    assert "block 3" in texts and "block 4" not in texts
    plt.close(fig)
    with pytest.raises(ValueError, match=r"8 scores and 7 values"):
        tiled_pass(_SCORES, _VALUES[:7])
    with pytest.raises(ValueError, match=r"block_size must be a positive integer, got 0"):
        tiled_pass(_SCORES, _VALUES, block_size=0)


# --- cross-attention and positional figures -------------------------------------------------------


def _box_of(fig, words: str):
    """The patch (box) whose centre is nearest the text that contains `words`."""
    text = next(t for t in fig.findobj(Text) if words in t.get_text())
    x, y = text.get_position()
    boxes = [p for p in fig.axes[0].patches if isinstance(p, matplotlib.patches.FancyBboxPatch)]
    return min(boxes, key=lambda p: abs(p.get_x() + p.get_width() / 2 - x) + abs(p.get_y() + p.get_height() / 2 - y))


def test_encoder_decoder_draws_the_wiring_with_the_tokens_given():
    fig = encoder_decoder(["der", "Hund"], ["<s>", "the", "dog"])
    texts = "\n".join(_texts(fig))
    for label in ("memory  (B, S, D)", "encoder stack", "masked self-attention", "cross-attention", "feed-forward",
                  "logits", "Q from the decoder, K, V from the memory", "LayerNorm", "residual"):
        assert label in texts, label
    assert {"der", "Hund", "<s>", "the", "dog"} <= set(_texts(fig))
    assert "S = 2" in texts and "L = 3" in texts
    shapes = re.findall(r"\(([A-Z0-9, ]+)\)", texts)
    assert {"B, S, D", "B, L, D", "B, H, L, S"} <= set(shapes) and "(B, L, $|\\mathcal{V}|$)" in texts
    assert {x.strip() for s in shapes for x in s.split(",")} <= set(attn.SHAPE_LEGEND)
    assert matplotlib.colors.to_hex(_box_of(fig, "Q from the decoder").get_facecolor()) == \
        ATTENTION_COLOURS["cross-attention"]
    plt.close(fig)


def test_encoder_decoder_arrows_carry_memory_and_queries_into_cross_attention():
    fig = encoder_decoder()
    arrows = {a.get_gid(): a for a in fig.axes[0].patches if a.get_gid()}
    memory, cross = _box_of(fig, "memory  (B"), _box_of(fig, "Q from the decoder")
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

    with pytest.raises(ValueError, match="source and target"):
        encoder_decoder([], ["<s>"])


# --- multi-head and causal figures ----------------------------------------------------------------



def test_head_split_labels_every_shape_and_colours_each_heads_columns_alike():
    fig = head_split(d_model=6, num_heads=3, tokens=["a", "b"])
    texts = "\n".join(_texts(fig))
    for label in ("(B, L, D)", "(B, H, L, E)", "(D, D)", "E = D / H = 2", "head 1", "head 3", "Concat"):
        assert label in texts, label
    assert "head 4" not in texts
    cells = [p for p in fig.axes[0].patches if type(p).__name__ == "Rectangle"]  # arrows are patches too
    assert len(set(matplotlib.colors.to_hex(p.get_facecolor()) for p in cells) - {"#e9eef5"}) == 3  # one per head
    # Q (2x6), three heads (2x2 each), Concat (2x6), W_O (6x6), output (2x6)
    assert len(cells) == 12 + 12 + 12 + 36 + 12
    plt.close(fig)


def test_head_split_refuses_a_head_count_that_does_not_divide_the_width():
    with pytest.raises(ValueError, match=r"d_model \(4\) must be divisible by num_heads \(3\): each head gets"):
        head_split(d_model=4, num_heads=3)
    with pytest.raises(ValueError, match="num_heads must be a positive integer, got 0"):
        head_split(d_model=4, num_heads=0)


def test_mask_before_softmax_blocks_exactly_the_upper_triangle_and_zeroes_its_weights():
    fig = mask_before_softmax(tokens=["x", "y", "z", "w"])
    texts = _texts(fig)
    n = 4
    assert texts.count("-∞") == 2 * n * (n - 1) // 2  # in the mask and in scores + M
    assert sum(t.startswith("a") and len(t) == 3 for t in texts) == n * (n + 1) // 2  # weights left
    joined = "\n".join(texts)
    assert "BEFORE the softmax" in joined and "Wrong order" in joined and "softmax" in joined
    plt.close(fig)


def test_kv_cache_loop_grows_the_cache_by_one_row_per_step():
    fig = kv_cache_loop(prompt_len=3, steps=2)
    texts = _texts(fig)
    assert [t for t in texts if t.startswith("S = ")] == ["S = 3", "S = 4", "S = 5"]
    assert texts.count("kv1") == 3 and texts.count("kv5") == 1
    assert "prompt, L = P = 3" in texts and "step 2, L = 1" in texts
    assert any("next token x6" in t for t in texts)
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        kv_cache_loop(steps=0)
    with pytest.raises(ValueError, match="prompt_len must be a positive integer, got True"):
        kv_cache_loop(prompt_len=True)
    plt.close(fig)
