"""The harness of book/debugging_attention.ipynb, moved into the package: seeded bug layers
(attn.book.bugs.seeded, without_positions, init_probe, zoo), the text of a spread over seeds
(attn.book.notebook.span) and the side-by-side weights table (attn.book.viz.weights_table)."""

import pytest
import torch

from attn import diagnose
from attn.book import bugs
from attn.book.notebook import span
from attn.book.viz import weights_table


def test_seeded_layers_differ_from_the_reference_only_by_their_bug():
    ref, bug = bugs.seeded(bugs.Reference), bugs.seeded(bugs.NoScale)
    assert type(bug) is bugs.NoScale and (bug.d_model, bug.num_heads) == (32, 4)
    for (name, a), (_, b) in zip(ref.state_dict().items(), bug.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    other = bugs.seeded(bugs.Reference, seed=1)
    assert not torch.equal(other.qkv.weight, ref.qkv.weight)


def test_seeded_seeds_the_global_generator_as_the_chapter_expects():
    bugs.seeded(bugs.Reference, d_model=8, num_heads=2, seed=3)
    after = torch.randn(4)
    torch.manual_seed(3)
    bugs.Reference(8, 2)
    assert torch.equal(after, torch.randn(4))


def test_without_positions_removes_only_the_positions():
    x = torch.randn(1, 6, 32)
    rev = torch.arange(5, -1, -1)
    for cls in (bugs.Reference, bugs.NoScale):
        plain = bugs.without_positions(cls)
        assert issubclass(plain, bugs.ForgotPositions) and issubclass(plain, cls)
        assert bugs.without_positions(cls) is plain  # one class per bug, not a new one per call
        m = bugs.seeded(plain)
        with torch.no_grad():  # no positions: reversing the tokens reverses the outputs
            torch.testing.assert_close(m(x[:, rev]), m(x)[:, rev])
    assert bugs.without_positions(bugs.Reference) is bugs.ForgotPositions


def test_init_probe_sees_the_missing_scale_at_every_width_from_8_on():
    for d_k in (8, 64):
        h_ok, w_ok = bugs.init_probe(bugs.Reference, d_k, seed=0)
        h_bug, w_bug = bugs.init_probe(bugs.NoScale, d_k, seed=0)
        assert h_bug < diagnose.ENTROPY_MIN < h_ok <= 1 and w_ok < w_bug <= 1
    # entropy 1 means uniform: 16 keys with weight 1/16 each
    assert bugs._mean_entropy(torch.full((3, 16), 1 / 16)) == pytest.approx(1.0)
    assert bugs._mean_entropy(torch.eye(16)) == 0.0
    assert bugs.init_probe(bugs.NoScale, 8, seed=2) == bugs.init_probe(bugs.NoScale, 8, seed=2)


def test_zoo_builds_every_bug_as_the_summary_table_checks_it():
    memory = torch.randn(1, 6, 32)
    seen = []
    for name, what, module, width, causal in bugs.zoo(memory):
        cls, description = bugs.BUGS[name]
        assert what == description and causal == (cls in bugs.CAUSAL_BUGS)
        if cls is bugs.KeysFromDecoder:
            assert isinstance(module, bugs.DecoderLayer) and isinstance(module.cross_attn, cls)
        else:
            assert type(module) is cls and module.is_causal == causal
        assert width == (30 if cls is bugs.TruncatedHeads else 32)
        seen.append(name)
    assert seen == list(bugs.BUGS)


def test_span_gives_the_range_at_the_digits_shown():
    assert span([0.451, 0.49, 0.47]) == "0.45–0.49"
    assert span(torch.tensor([0.4712, 0.4731])) == "0.47"
    assert span([1.0, 2.0], digits=0) == "1–2"
    with pytest.raises(ValueError, match="at least one value"):
        span([])


def test_weights_table_sets_implementations_side_by_side():
    a, b = torch.eye(2), torch.full((2, 2), 0.5)
    t = weights_table(["x", "y"], {"listing": a, "attn": b})
    assert t.headers == ["query", "listing: x", "listing: y", "attn: x", "attn: y"]
    assert t.rows == [["x", "1.000", "0.000", "0.500", "0.500"], ["y", "0.000", "1.000", "0.500", "0.500"]]
    with pytest.raises(ValueError, match=r"weights\['attn'\] must be \(2, 2\) for 2 tokens, got \(2, 3\)"):
        weights_table(["x", "y"], {"listing": a, "attn": torch.zeros(2, 3)})


def test_the_reference_layer_refuses_an_indivisible_width_with_the_message_the_chapter_shows():
    """Section 10 of the chapter shows this exact message (a stored output); TruncatedHeads skips the check."""
    with pytest.raises(ValueError) as e:
        bugs.Reference(30, 4)
    assert str(e.value) == "d_model (30) must be divisible by num_heads (4)"
    assert bugs.TruncatedHeads(30, 4).d_head == 7


# --- memory of a training step, and what model parallelism divides (attn.book.debugging_attention) -----------

from attn.blocks import EncoderLayer  # noqa: E402
from attn.book import debugging_attention as dbg  # noqa: E402
from attn.functional import explicit_attention  # noqa: E402


def test_saved_bytes_counts_what_autograd_keeps_once_per_storage_and_not_the_parameters():
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    # x @ w saves x (for w's gradient) and w (for x's; excluded); tanh saves its output: two (4, 8) tensors
    assert dbg.saved_bytes(lambda: torch.tanh(x @ w), exclude=[w]) == 2 * 4 * 8 * 4
    assert dbg.saved_bytes(lambda: torch.tanh(x @ w)) == 2 * 4 * 8 * 4 + 8 * 8 * 4
    # explicit attention keeps its (B, H, L, S) weights for the backward pass
    q, k, v = (torch.randn(2, 3, 5, 4, requires_grad=True) for _ in range(3))
    assert dbg.saved_bytes(lambda: explicit_attention(q, k, v)[0]) >= 2 * 3 * 5 * 5 * 4


def test_step_memory_grows_only_in_the_activations_and_in_proportion_to_the_batch():
    torch.manual_seed(0)
    layer = EncoderLayer(16, 2, 32, dropout=0.0)
    n = sum(p.numel() for p in layer.parameters())
    rows = dbg.step_memory(layer, lambda B: torch.randn(B, 6, 16), (2, 4, 8))
    assert [r["B"] for r in rows] == [2, 4, 8]
    for r in rows:
        assert (r["weights"], r["gradients"], r["AdamW state"]) == (4 * n, 4 * n, 8 * n)
    assert rows[0]["activations"] > 0
    assert [r["activations"] for r in rows] == [rows[0]["activations"] * m for m in (1, 2, 4)]
    with pytest.raises(ValueError, match="batch size"):
        dbg.step_memory(layer, lambda B: torch.randn(B, 6, 16), (0,))


def test_layerwise_split_keeps_consecutive_groups_and_adds_up():
    groups = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    assert dbg.layerwise_split(groups, 1) == [15]
    assert dbg.layerwise_split(groups, 2) == [1 + 2 + 3, 4 + 5]
    assert dbg.layerwise_split(groups, 5) == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="devices"):
        dbg.layerwise_split(groups, 6)
    with pytest.raises(ValueError, match="devices"):
        dbg.layerwise_split(groups, 0)


def test_tensor_parallel_split_on_the_meta_device_divides_all_but_the_copied_parameters():
    with torch.device("meta"):
        layer = EncoderLayer(64, 4, 256)
    assert all(p.is_meta for p in layer.parameters())
    names = {name for name, _ in layer.named_parameters()}
    assert set(dbg.TENSOR_PARALLEL_DIM) <= names  # every cut names a real parameter
    D, F = 64, 256
    whole = 4 * (3 * D * D + 3 * D + D * D + D + D * F + F + F * D + D + 4 * D)  # float32 bytes
    copied = 4 * (D + D + 4 * D)  # out_proj and linear2 biases, two LayerNorms
    for n in (1, 2, 4):
        got = dbg.tensor_parallel_split(layer, n)
        assert got == {"split": (whole - copied) // n, "copied": copied, "whole layer": whole}
    with pytest.raises(ValueError, match=r"must be divisible by devices \(3\)"):
        dbg.tensor_parallel_split(layer, 3)
