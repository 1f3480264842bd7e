"""attn.diagnose: every check passes on correct modules (ours and PyTorch's, in training mode) and
fails on each bug of the zoo (attn.book.bugs) it is meant to catch; bad callables give a failed finding,
not a crash; the report renders deterministically. The zoo's reference layer is itself checked
against attn.MultiHeadAttention, and the causal chapter's small models are reused, not rebuilt."""

import math

import pytest
import torch
from test_causal_chapter import POSITIONALS, lm  # the causal chapter's models, reused
from torch import nn
from torch.testing import assert_close

import attn
from attn import diagnose, masks
from attn.book import bugs

D, H = 32, 4


def correct_modules():
    """name -> builder of a correct module (the builders seed themselves)."""
    return {
        "attn.MultiHeadAttention": lambda: attn.MultiHeadAttention(D, H),
        "attn.MultiHeadAttention+ALiBi": lambda: attn.MultiHeadAttention(D, 8, positional=attn.ALiBi(8)),
        "attn.MultiHeadAttention+RoPE": lambda: attn.MultiHeadAttention(D, H, positional=attn.RotaryPositionalEncoding(D // H)),
        "attn.MultiHeadAttention+T5": lambda: attn.MultiHeadAttention(D, H, positional=attn.T5RelativePositionBias(H)),
        "attn.SelfAttention": lambda: attn.SelfAttention(D),
        "attn.EncoderLayer post-LN": lambda: attn.blocks.EncoderLayer(D, H, 64, dropout=0.0),
        "attn.EncoderLayer pre-LN": lambda: attn.blocks.EncoderLayer(D, H, 64, dropout=0.0, norm_first=True),
        "bugs.Reference": lambda: bugs.Reference(D, H),
        "bugs.DecoderLayer": lambda: bugs.DecoderLayer(D, H, torch.randn(1, 6, D)),
    }


def torch_modules(dropout=0.0):
    return {
        "nn.MultiheadAttention batch_first": lambda: nn.MultiheadAttention(D, H, dropout=dropout, batch_first=True),
        "nn.MultiheadAttention (L, B, D)": lambda: nn.MultiheadAttention(D, H, dropout=dropout),
        "nn.TransformerEncoderLayer post-LN": lambda: nn.TransformerEncoderLayer(D, H, 64, dropout=dropout, batch_first=True),
        "nn.TransformerEncoderLayer pre-LN": lambda: nn.TransformerEncoderLayer(D, H, 64, dropout=dropout, batch_first=True,
                                                                               norm_first=True),
    }


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", list(correct_modules()))
def test_every_check_passes_on_correct_attn_modules(name, causal):
    for seed in range(1):
        torch.manual_seed(seed)
        module = correct_modules()[name]()
        if isinstance(module, bugs.Reference):
            module.is_causal = causal
        report = diagnose.check(module, d_model=D, is_causal=causal)
        assert report, repr(report)
        expected = {"shape contract", "output width", "reach", "padding", "positions", "fully masked rows",
                    "half precision", "scaling"} | ({"causality"} if causal else set())
        assert {f.name for f in report.findings} == expected
        assert all(f.passed is not None for f in report.findings if f.name != "positions")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", list(torch_modules()))
def test_every_check_passes_on_pytorch_modules_in_training_mode(name, causal):
    for seed in range(2):
        torch.manual_seed(seed)
        report = diagnose.check(torch_modules()[name]().train(), d_model=D, is_causal=causal)
        assert report, repr(report)
        assert report["positions"].passed is None and report["positions"].value.endswith("ignores positions")


def test_dropout_does_not_fool_the_perturbation_checks():
    """Paired calls are reseeded, so both draw the same dropout masks."""
    torch.manual_seed(0)
    report = diagnose.check(nn.TransformerEncoderLayer(D, H, 64, dropout=0.3, batch_first=True).train(), d_model=D,
                            is_causal=True)
    assert report, repr(report)


def test_non_finite_outputs_on_a_fully_masked_row_are_reported():
    """A softmax over a row of -inf (no guard) gives NaN: the check fails and counts them."""
    def unguarded(x, key_mask):
        s = x @ x.transpose(1, 2) / math.sqrt(D)  # (B, L, L)
        if key_mask is not None:
            s = s.masked_fill(~key_mask[:, None, :], float("-inf"))
        return torch.softmax(s, dim=-1) @ x

    report = diagnose.check(unguarded, d_model=D, only=("fully masked rows",))
    assert report.failed == ["fully masked rows"]
    assert report["fully masked rows"].value.startswith("non-finite: ")
    guarded = diagnose.check(lambda x, km: attn.scaled_dot_product_attention(
        x, x, x, mask=None if km is None else km[:, None, :]), d_model=D, only=("fully masked rows",))
    assert guarded.failed == []


def test_the_report_on_pytorch_eval_fast_path_agrees_with_what_pytorch_computes():
    """PyTorch 2.13's inference fast path returns NaN for a fully masked row; the report says so
    while it does, and passes once PyTorch returns finite values (not asserting PyTorch's behaviour)."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(D, H, batch_first=True).eval()
    x = torch.randn(2, 5, D)
    ignore = torch.zeros(2, 5, dtype=torch.bool)
    ignore[1] = True  # every key of sequence 1 is padding
    with torch.no_grad():  # the fast path runs only without autograd
        out = mha(x, x, x, key_padding_mask=ignore, need_weights=False)[0]
    finite = bool(torch.isfinite(out).all())
    report = diagnose.check(mha, d_model=D)
    assert report["fully masked rows"].passed is finite
    assert report.failed == ([] if finite else ["fully masked rows"])
    if not finite:
        assert report["fully masked rows"].value.startswith("non-finite: ")
    assert diagnose.check(mha.train(), d_model=D)  # the same weights in training mode pass


# bug -> (the check(s) that must catch it, whether it is a causal bug)
TARGETS = {
    bugs.NoScale: ({"scaling"}, False),
    bugs.ForgotPositions: ({"positions"}, False),
    bugs.MaskAfterSoftmax: ({"padding", "causality"}, True),
    bugs.InvertedMask: ({"padding"}, False),
    bugs.OffByOneCausal: ({"causality"}, True),
    bugs.StaleTrainingMask: ({"causality"}, True),
    bugs.KeysFromDecoder: ({"causality"}, True),
    bugs.HeadsWithoutTranspose: ({"reach"}, False),
    bugs.MinusBigInHalf: ({"half precision"}, False),
    bugs.TruncatedHeads: ({"shape contract", "output width"}, False),
}


def build(cls, causal: bool, d_model: int = D, num_heads: int = H, seed: int = 0):
    torch.manual_seed(seed)
    if cls is bugs.KeysFromDecoder:  # a cross-attention bug: check the decoder layer around it
        return bugs.DecoderLayer(d_model, num_heads, torch.randn(1, 6, d_model), cross=cls)
    return cls(d_model, num_heads, is_causal=causal)


def test_the_zoo_and_the_targets_list_the_same_bugs():
    assert {cls for cls, _ in bugs.BUGS.values()} == set(TARGETS)


@pytest.mark.parametrize("cls", list(TARGETS), ids=lambda c: c.__name__)
def test_each_bug_fails_the_check_meant_to_catch_it(cls):
    targets, causal_bug = TARGETS[cls]
    for causal in ([True] if causal_bug else [False, True]):
        d = 30 if cls is bugs.TruncatedHeads else D  # 30 = 4 heads of 7, and 2 dimensions dropped
        report = diagnose.check(build(cls, causal, d), d_model=d, is_causal=causal, positions=True)
        wanted = targets if causal else targets - {"causality"}
        assert not report
        assert wanted <= set(report.failed), repr(report)
    # (the same layers without the bug pass: test_every_check_passes_on_correct_attn_modules)


def test_only_runs_the_named_checks_and_rejects_unknown_names():
    report = diagnose.check(bugs.NoScale(D, H), d_model=D, only=("scaling",))
    assert [f.name for f in report.findings] == ["shape contract", "scaling"] and report.failed == ["scaling"]
    with pytest.raises(ValueError, match="only names unknown checks"):
        diagnose.check(bugs.NoScale(D, H), d_model=D, only=("scale",))


@pytest.mark.parametrize("d_k", [8, 16, 64])
@pytest.mark.parametrize("init", ["default", "xavier"])
def test_entropy_threshold_separates_missing_scale_from_correct_scaling(d_k, init):
    """Measured margins: correct modules stay near 0.95-0.98, the missing scale falls below 0.9
    from d_k = 8 on (at d_k = 4 the factor is only 2, and the two overlap: not asserted)."""
    for seed in range(3):
        for cls, should_pass in ((bugs.ForgotPositions, True), (NoScaleNoPositions, False)):
            torch.manual_seed(seed)
            m = cls(4 * d_k, 4)
            if init == "xavier":
                nn.init.xavier_uniform_(m.qkv.weight)
            finding = diagnose.check(m, d_model=4 * d_k, only=("scaling",))["scaling"]
            assert finding.passed is should_pass, finding.value


class NoScaleNoPositions(bugs.NoScale, bugs.ForgotPositions):
    """Both omissions, so the scores see exactly x, as in the entropy measurements."""


def test_scaling_finding_states_what_is_measured_not_one_hot_weights_or_vanished_gradients():
    """At d_k = 64 without the scale the largest weight of a row is about 0.55-0.6, not 1: the
    finding says the softmax sharpens (scores grow like sqrt(d_k)), nothing about saturation."""
    finding = diagnose.check(bugs.NoScale(4 * 64, 4), d_model=4 * 64, only=("scaling",))["scaling"]
    assert finding.passed is False
    assert "grow like sqrt(d_k)" in finding.explanation and "sharpens" in finding.explanation
    assert not any(claim in finding.explanation for claim in ("vanish", "saturat", "almost all", "one-hot"))
    largest = [bugs.init_probe(bugs.NoScale, 64, seed)[1] for seed in range(3)]
    assert all(0.4 < w < 0.7 for w in largest), largest  # sharper than uniform (1/16), far from one-hot


def test_wrong_signature_is_a_failed_shape_contract_not_a_crash():
    report = diagnose.check(lambda x: x, d_model=D)
    assert not report and report.failed == ["shape contract"]
    assert "TypeError" in report["shape contract"].value and "(2, 8, 32)" in report["shape contract"].value


def test_wrong_output_shape_and_tuple_outputs_are_reported_with_shapes():
    report = diagnose.check(lambda x, _km: x[..., :-1], d_model=D)
    assert report.failed == ["shape contract"]
    assert report["shape contract"].value == "x (2, 8, 32) gave output (2, 8, 31), expected (2, 8, 32)"
    mha = attn.MultiHeadAttention(D, H)
    report = diagnose.check(lambda x, km: mha(x, key_mask=km), d_model=D)  # (output, weights): no adapter
    assert "returned tuple" in report["shape contract"].value


def test_a_module_that_crashes_on_one_probe_gets_a_failed_finding():
    def only_full_batches(x, key_mask):
        if key_mask is not None and not key_mask.any(-1).all():
            raise RuntimeError("cannot handle an empty sequence")
        return x

    report = diagnose.check(only_full_batches, d_model=D)
    assert report["fully masked rows"].passed is False
    assert report["fully masked rows"].value == "raised RuntimeError: cannot handle an empty sequence"


def test_a_callable_that_raises_on_the_first_probe_is_a_failed_shape_contract():
    """As the docstring promises: a finding, not the callable's exception (issue 18)."""
    def broken(_x, _key_mask):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    report = diagnose.check(broken, d_model=D)
    assert report.failed == ["shape contract"]
    assert report["shape contract"].value == ("calling f(x, key_mask) with x (2, 8, 32) raised RuntimeError: "
                                              "mat1 and mat2 shapes cannot be multiplied")


def test_check_leaves_the_callers_random_state_as_it_was():
    mha = attn.MultiHeadAttention(D, H, dropout=0.1).train()  # dropout draws from the global generator
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    diagnose.check(mha, d_model=D, only=("padding",))
    assert_close(torch.rand(3), expected, atol=0, rtol=0)


def test_num_heads_not_dividing_d_model_fails_the_shape_contract():
    report = diagnose.check(attn.MultiHeadAttention(D, H), d_model=D, num_heads=5)
    assert report["shape contract"].passed is False and "not divisible" in report["shape contract"].value


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="d_model must be a positive integer"):
        diagnose.check(attn.MultiHeadAttention(D, H), d_model=0)
    with pytest.raises(ValueError, match="^d_model must be a positive integer, got True$"):
        diagnose.check(attn.MultiHeadAttention(D, H), d_model=True)  # a bool is not a width
    with pytest.raises(ValueError, match=r"^length must be at least 4 \(the probes perturb, pad and mask a few positions\), got 3$"):
        diagnose.check(attn.MultiHeadAttention(D, H), d_model=D, length=3)
    with pytest.raises(ValueError, match=r"^batch must be at least 2 \(the padding probes pad every sequence but the first\), got 1$"):
        diagnose.check(attn.MultiHeadAttention(D, H), d_model=D, batch=1)
    with pytest.raises(ValueError, match=r"^length must be an integer, at least 4 .*got 8.0$"):
        diagnose.check(attn.MultiHeadAttention(D, H), d_model=D, length=8.0)
    with pytest.raises(TypeError, match="f must be callable"):
        diagnose.check(3, d_model=D)


def test_report_renders_deterministically_without_addresses():
    def render():
        torch.manual_seed(0)
        return diagnose.check(bugs.OffByOneCausal(D, H, is_causal=True), d_model=D, is_causal=True)

    a, b = render(), render()
    assert repr(a) == repr(b) and a._repr_html_() == b._repr_html_()
    assert "0x" not in repr(a) and "<table" in a._repr_html_()
    assert repr(a).startswith("diagnose OffByOneCausal: 1 of 9 checks failed")
    assert "FAIL  causality" in repr(a)


def test_adapters_agree_with_the_modules_own_calls():
    torch.manual_seed(0)
    x = torch.randn(2, 6, D)
    km = masks.padding([6, 4], 6)[:, 0]  # (B, S) True = real
    mha = nn.MultiheadAttention(D, H, batch_first=True)
    ours = attn.MultiHeadAttention(D, H)
    ours.load_state_dict({"in_proj.weight": mha.in_proj_weight, "in_proj.bias": mha.in_proj_bias,
                          "out_proj.weight": mha.out_proj.weight, "out_proj.bias": mha.out_proj.bias})
    for causal in (False, True):
        a = diagnose.adapt(mha.train(), is_causal=causal)(x, km)
        b = diagnose.adapt(ours, is_causal=causal)(x, km)
        assert_close(a, b, atol=1e-5, rtol=1e-5)
    tel = nn.TransformerEncoderLayer(D, H, 64, dropout=0.0)  # (L, B, D) layout
    assert_close(diagnose.adapt(tel)(x, km), tel(x.transpose(0, 1), src_key_padding_mask=~km).transpose(0, 1))


@pytest.mark.parametrize("causal", [False, True])
def test_zoo_reference_equals_multi_head_attention_on_positioned_input(causal):
    torch.manual_seed(0)
    ref = bugs.Reference(D, H, is_causal=causal)
    mha = attn.MultiHeadAttention(D, H)
    mha.in_proj.load_state_dict(ref.qkv.state_dict())
    mha.out_proj.load_state_dict(ref.out.state_dict())
    x = torch.randn(3, 7, D)
    km = masks.padding([7, 5, 0], 7)[:, 0]  # the third sequence has no real token
    expected = mha(x + ref.pos_table[:7], key_mask=km, is_causal=causal)[0]
    assert_close(ref(x, km), expected, atol=1e-5, rtol=1e-5)


def test_dependency_map_shows_the_causal_triangle_and_the_off_by_one_leak():
    x = torch.randn(1, 6, D)
    ok = diagnose.dependency_map(bugs.Reference(D, H, is_causal=True), x)
    leak = diagnose.dependency_map(bugs.OffByOneCausal(D, H, is_causal=True), x)
    upper = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    assert (ok[upper] == 0).all() and (ok[~upper] > 1e-4).all()
    assert (leak.diagonal(1) > 1e-4).all() and (leak[torch.triu(torch.ones(6, 6, dtype=torch.bool), 2)] == 0).all()


@pytest.mark.parametrize("pos", POSITIONALS)
def test_the_causal_chapters_models_pass_and_positions_are_seen_where_they_act(pos):
    layer = lm(pos).layers[0]  # an attn EncoderLayer inside the causal chapter's language model
    report = diagnose.check(layer, d_model=layer.self_attn.d_model, is_causal=True)
    assert report, repr(report)
    uses = report["positions"].value.endswith("uses positions")
    assert uses is (pos in ("alibi", "rope", "t5")), "sinusoidal positions are added before the layer"


def test_stale_training_mask_is_right_at_the_training_length_only():
    layer = bugs.StaleTrainingMask(D, H, is_causal=True, max_len=8)
    finding = diagnose.check(layer, d_model=D, is_causal=True, length=8)["causality"]
    assert finding.passed is False and "(L = 5," in finding.value  # the shorter probe catches it
    full = diagnose.dependency_map(layer, torch.randn(1, 8, D))
    short = diagnose.dependency_map(layer, torch.randn(1, 5, D))
    assert (torch.triu(full, 1) == 0).all()
    leaks = torch.triu(short, 1) > 0  # (L, L): query i reads a later token j
    assert torch.equal(leaks, masks.causal(5, offset=8 - 5) & ~masks.causal(5))


def test_nan_gradients_behind_finite_outputs_are_caught():
    """With an additive mask, zeroing a fully masked row after the softmax hides the NaN in the
    forward pass only: the backward pass through softmax over all -inf is still NaN. (With
    masked_fill the gradient of the blocked scores is cut to zero, and the NaN never arrives.)"""
    torch.manual_seed(0)
    proj = nn.Linear(D, 3 * D)

    def hides_nan(x, key_mask):
        q, k, v = proj(x).chunk(3, -1)  # (B, L, D) each
        s = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, L, S)
        if key_mask is not None:
            s = s + masks.to_additive(key_mask[:, None, :])  # 0 / -inf
        w = torch.softmax(s, -1)
        if key_mask is not None:
            w = w.masked_fill(~key_mask.any(-1)[:, None, None], 0.0)  # forward looks fine
        return w @ v

    finding = diagnose.check(hides_nan, d_model=D)["fully masked rows"]
    assert finding.passed is False
    assert finding.value == "non-finite: 0 of 512 outputs, 256 of 512 input gradients"
