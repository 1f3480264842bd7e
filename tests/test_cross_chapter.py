"""What the cross-attention chapter relies on: queries from one sequence, keys and values from another
(L != S) as in the formula and in PyTorch; padded source keys get exactly zero weight and change
nothing; the encoder's keys and values are projected once per source when decoding with
cache="all"; teacher forcing cannot read the future."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

import attn
from attn import masks
from attn.book.data import CharVocab, DateTask
from attn.models import Seq2Seq

TOL = dict(atol=1e-5, rtol=1e-5)


def _torch_copy(m: attn.MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(m.d_model, m.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(m.in_proj.weight)
        ref.in_proj_bias.copy_(m.in_proj.bias)
        ref.out_proj.weight.copy_(m.out_proj.weight)
        ref.out_proj.bias.copy_(m.out_proj.bias)
    return ref.eval()


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 3), L=st.integers(1, 6), S=st.integers(1, 9), H=st.sampled_from([1, 2, 4]),
       E=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_cross_attention_is_the_formula_and_matches_pytorch_with_padded_keys(B, L, S, H, E, seed):
    torch.manual_seed(seed)
    D = H * E
    m = attn.MultiHeadAttention(D, H).eval()
    y, memory = torch.randn(B, L, D), torch.randn(B, S, D)
    lengths = torch.randint(1, S + 1, (B,))
    key_mask = masks.padding(lengths, S)[:, 0]  # (B, S) True = real key
    with torch.no_grad():
        out, w = m(y, memory, key_mask=key_mask, need_weights=True, average_weights=False)
        # The formula, head by head, with W_Q applied to the decoder and W_K, W_V to the memory.
        W_q, W_k, W_v = m.in_proj.weight.split(D)
        b_q, b_k, b_v = m.in_proj.bias.split(D)
        q = (y @ W_q.T + b_q).view(B, L, H, E).transpose(1, 2)  # (B, H, L, E)
        k = (memory @ W_k.T + b_k).view(B, S, H, E).transpose(1, 2)  # (B, H, S, E)
        v = (memory @ W_v.T + b_v).view(B, S, H, E).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(E)).masked_fill(~key_mask[:, None, None, :], float("-inf"))
        a = torch.softmax(scores, -1)  # (B, H, L, S)
        expected = m.out_proj((a @ v).transpose(1, 2).reshape(B, L, D))
        r_out, r_w = _torch_copy(m)(y, memory, memory, key_padding_mask=~key_mask, average_attn_weights=False)
    assert w.shape == (B, H, L, S)
    assert_close(w, a, **TOL)
    assert_close(out, expected, **TOL)
    assert_close(out, r_out, **TOL)
    assert_close(w, r_w, **TOL)
    assert_close(w.sum(-1), torch.ones(B, H, L), **TOL)  # each target row is a distribution over S
    assert (w.masked_select(~key_mask[:, None, None, :]) == 0).all()  # exactly zero, not small


def test_permuting_the_memory_permutes_the_weight_columns_and_leaves_the_output_alone():
    m = attn.MultiHeadAttention(16, 4).eval()
    y, memory = torch.randn(2, 3, 16), torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    with torch.no_grad():
        out, w = m(y, memory, need_weights=True)
        out_p, w_p = m(y, memory[:, perm], need_weights=True)
    assert_close(out_p, out, **TOL)
    assert_close(w_p, w[..., perm], **TOL)


def _padded_and_alone(model: Seq2Seq, task: DateTask, pairs):
    src, tin, _, lengths = task.batch(pairs)
    key_mask = masks.padding(lengths)[:, 0]
    with torch.no_grad():
        batched = model(src, tin, key_mask)
        alone = [model(*task.batch([p])[:2]) for p in pairs]
    return batched, alone, src, key_mask


@pytest.mark.slow  # several seconds: `make unit` skips it, `make test` runs it
def test_a_padded_batch_computes_what_each_source_computes_alone():
    task = DateTask()
    model = Seq2Seq(len(task.src_vocab), len(task.tgt_vocab), d_model=32, num_heads=4, max_len=32).eval()
    pairs = task.sample(6, seed=3)
    assert len({len(s) for s, _ in pairs}) > 1, "the batch must need padding"
    batched, alone, src, key_mask = _padded_and_alone(model, task, pairs)
    for b, logits in enumerate(alone):
        assert_close(batched[b : b + 1], logits, **TOL)
    with torch.no_grad():  # without the key mask the padding leaks in
        unmasked = model(src, task.batch(pairs)[1])
    short = int(key_mask.sum(-1).argmin())
    assert not torch.allclose(unmasked[short], batched[short], **TOL)


def _count_projections(model: Seq2Seq, module_suffix: str) -> list[int]:
    """Wrap the K/V projection of the matching attention modules; return a live call counter."""
    calls = [0]
    for name, m in model.named_modules():
        if name.endswith(module_suffix):
            original = m._project

            def counted(*args, _original=original, **kwargs):
                calls[0] += 1
                return _original(*args, **kwargs)

            m._project = counted  # instance attribute: shadows the method for this module only
    return calls


@pytest.mark.parametrize("cache, per_layer", [({}, lambda _steps: 1), ({"cross_cache": False}, lambda steps: steps),
                                              ({"use_cache": False}, lambda steps: steps)])
def test_generation_projects_the_memory_once_per_layer_only_with_the_static_cache(cache, per_layer):
    model = Seq2Seq(20, 15, d_model=32, num_heads=4, num_encoder_layers=1, num_decoder_layers=3).eval()
    src = torch.randint(3, 20, (4, 9))
    key_mask = masks.padding([9, 7, 5, 2])[:, 0]
    steps = 6
    kw = dict(src_key_mask=key_mask, start_id=1)  # no eos_id: never stops early
    reference = model.generate(src, steps, use_cache=False, **kw)
    calls = _count_projections(model, "cross_attn")
    out = model.generate(src, steps, **cache, **kw)
    assert torch.equal(out, reference) and out.shape == (4, 1 + steps)
    assert calls[0] == len(model.decoder.layers) * per_layer(steps)


def test_static_cache_ignores_a_new_memory_after_the_first_call():
    m = attn.MultiHeadAttention(16, 4).eval()
    y, memory = torch.randn(2, 4, 16), torch.randn(2, 5, 16)
    cache = attn.KVCache(static=True)
    with torch.no_grad():
        m(y[:, :1], memory, cache=cache)
        k_first = cache.k.clone()
        later, _ = m(y[:, 1:], torch.zeros_like(memory), cache=cache)  # the memory is not projected again
        expected, _ = m(y[:, 1:], memory)
    assert torch.equal(cache.k, k_first)
    assert_close(later, expected, **TOL)


def test_teacher_forcing_cannot_read_later_target_characters():
    task = DateTask()
    model = Seq2Seq(len(task.src_vocab), len(task.tgt_vocab), d_model=32, num_heads=4, max_len=32).eval()
    src, tin, _, lengths = task.batch(task.sample(3, seed=5))
    key_mask = masks.padding(lengths)[:, 0]
    t = 4
    changed = tin.clone()
    changed[:, t + 1 :] = torch.randint(3, len(task.tgt_vocab), changed[:, t + 1 :].shape)
    with torch.no_grad():
        a, b = model(src, tin, key_mask), model(src, changed, key_mask)
    assert_close(a[:, : t + 1], b[:, : t + 1], **TOL)  # positions up to t see only tokens up to t
    assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :], **TOL)


def test_cross_attention_weights_recorded_in_seq2seq_are_B_H_L_S():
    task = DateTask()
    model = Seq2Seq(len(task.src_vocab), len(task.tgt_vocab), d_model=32, num_heads=4,
                    num_decoder_layers=2, max_len=32).eval()
    src, tin, _, lengths = task.batch(task.sample(5, seed=2))
    with attn.record_attention(model) as rec, torch.no_grad():
        model(src, tin, masks.padding(lengths)[:, 0])
    cross = {k: v for k, v in rec.items() if k.endswith("cross_attn")}
    assert list(cross) == [f"transformer.decoder.layers.{i}.cross_attn" for i in range(2)]
    for w in cross.values():
        assert w.shape == (5, 4, tin.shape[1], src.shape[1])
        assert_close(w.sum(-1), torch.ones(5, 4, tin.shape[1]), **TOL)


def test_uniform_attention_puts_the_alignment_fraction_on_the_true_characters():
    # The chapter's baseline: a row spread evenly over the S real source characters puts |A_t| / S
    # of its mass on the true ones.
    task = DateTask()
    for src, tgt in task.sample(50, seed=9):
        truth = task.alignment(src, tgt)  # (10, S)
        uniform = torch.full_like(truth, 1 / len(src))
        assert_close((uniform * truth).sum(-1), truth.sum(-1) / len(src))
        assert truth[[4, 7]].sum() == 0  # hyphens have no source
        assert (truth[[0, 1, 2, 3, 5, 6, 8, 9]].sum(-1) > 0).all()  # every digit has one


def test_generation_on_an_untrained_model_stops_at_eos_or_max_new_tokens():
    task = DateTask()
    model = Seq2Seq(len(task.src_vocab), len(task.tgt_vocab), d_model=32, num_heads=4, max_len=32).eval()
    src, _, _, lengths = task.batch(task.sample(4, seed=1))
    out = model.generate(src, 11, src_key_mask=masks.padding(lengths)[:, 0], start_id=CharVocab.BOS,
                         eos_id=CharVocab.EOS)
    assert out.shape[0] == 4 and 2 <= out.shape[1] <= 12 and (out[:, 0] == CharVocab.BOS).all()
    out = out[:, 1:]  # the new tokens
    for row in out.tolist():  # once a sequence has ended, it only repeats </s>
        if CharVocab.EOS in row:
            assert set(row[row.index(CharVocab.EOS):]) == {CharVocab.EOS}
    if out.shape[1] < 11:  # decoding stopped early only because every sequence had ended
        assert (out == CharVocab.EOS).any(dim=1).all()


def test_static_cache_and_decoder_parameter_arithmetic_of_exercise_5():
    from attn.blocks import DecoderLayer

    B, S, D, layers, bytes_per_float = 32, 512, 512, 6, 4
    cache = 2 * B * S * D * layers * bytes_per_float  # K and V, every decoder layer
    assert cache == 384 * 2**20
    with torch.device("meta"):
        layer = DecoderLayer(D, 8, 4 * D)
    per_layer = sum(p.numel() for p in layer.parameters())
    assert per_layer == 16 * D * D + 19 * D == 4_204_032
    assert 3.5 < cache / (layers * per_layer * bytes_per_float) < 4.0  # "almost four times"


# --- the chapter's helpers: attn.book.cross_attention's alignment scores and step FLOPs

def test_alignment_scores_are_one_for_the_true_alignment_and_the_baseline_for_uniform_rows():
    task = DateTask()
    pairs = task.sample(20, seed=4)
    S = max(len(s) for s, _ in pairs)
    truth = torch.zeros(len(pairs), 1, 11, S)  # (B, K=1, L, S): the true alignment, rows normalised
    uniform = torch.zeros_like(truth)
    for b, (s, g) in enumerate(pairs):
        a = task.alignment(s, g)  # (10, len(s))
        truth[b, 0, :10, : len(s)] = a / a.sum(-1, keepdim=True).clamp(min=1)
        uniform[b, 0, :, : len(s)] = 1 / len(s)
    perfect = attn.book.cross_attention.alignment_scores(truth, pairs, task)
    for field in [*attn.book.cross_attention.DATE_FIELDS, "all digits"]:
        assert_close(perfect["mass"][field], torch.ones(1))
    assert_close(perfect["hits"], torch.ones(1))
    flat = attn.book.cross_attention.alignment_scores(uniform, pairs, task)
    for field, baseline in flat["uniform"].items():
        assert_close(flat["mass"][field], torch.tensor([baseline]), atol=1e-6, rtol=1e-5)
    assert 0 < flat["uniform"]["all digits"] < 0.5
    with pytest.raises(ValueError, match="len\\(pairs\\)"):
        attn.book.cross_attention.alignment_scores(truth[:3], pairs, task)


def test_field_mass_and_year_breakdown_on_rows_that_look_at_one_known_place():
    task = DateTask()
    pairs = task.sample(10, seed=8)
    S = max(len(s) for s, _ in pairs)
    own = torch.zeros(len(pairs), 10, S)  # year digit t looks at its own digit; others at their field
    space = torch.zeros_like(own)  # every year digit looks at the space before the year
    for b, (s, g) in enumerate(pairs):
        a = task.alignment(s, g)
        own[b, :10, : len(s)] = a / a.sum(-1, keepdim=True).clamp(min=1)
        space[b, :4, len(s) - 5] = 1.0
    assert attn.book.cross_attention.year_digit_breakdown(own, pairs) == pytest.approx((1.0, 0.0, 0.0))
    assert attn.book.cross_attention.year_digit_breakdown(space, pairs) == pytest.approx((0.0, 0.0, 1.0))
    assert attn.book.cross_attention.date_field_mass(own, pairs) == pytest.approx(1.0, abs=1e-6)
    assert attn.book.cross_attention.date_field_mass(space, pairs) == 0.0  # the space belongs to no field


def test_decoder_step_flops_reprojection_is_what_the_flop_counter_sees():
    torch.manual_seed(0)
    B, S, D, layers, steps = 2, 9, 32, 2, 6
    model = Seq2Seq(20, 15, d_model=D, num_heads=4, num_encoder_layers=1, num_decoder_layers=layers).eval()
    src = torch.randint(3, 20, (B, S))
    with torch.no_grad():
        once = attn.measure.flops(lambda: model.generate(src, steps, start_id=1))
        every_step = attn.measure.flops(lambda: model.generate(src, steps, start_id=1, cross_cache=False))
    f = attn.book.cross_attention.decoder_step_flops
    per_step = f(B, S, D, 0, reproject=True) - f(B, S, D, 0, reproject=False)
    assert per_step == 4 * B * S * D * D
    assert every_step - once == (steps - 1) * layers * per_step  # all steps after the first
    assert f(2 * B, S, D, 3, reproject=True) == 2 * f(B, S, D, 3, reproject=True)  # linear in the batch
    with pytest.raises(ValueError, match="t must be a non-negative integer"):
        f(B, S, D, -1, reproject=False)


# --- Soft against hard alignment, and gradients into the encoder (issue 32) ---

def _cross_module_and_inputs(seed=0, B=3, L=4, S=6, H=2, E=4):
    torch.manual_seed(seed)
    m = attn.MultiHeadAttention(H * E, H).eval()
    query, memory = torch.randn(B, L, H * E), torch.randn(B, S, H * E)
    key_mask = masks.padding(torch.tensor([S, S - 2, 1]))[:, 0]  # (B, S)
    return m, query, memory, key_mask


def test_soft_recomputation_is_what_the_module_computes():
    from attn.book.cross_attention import cross_attention_output

    m, query, memory, key_mask = _cross_module_and_inputs()
    with torch.no_grad():
        out, w = m(query, memory, key_mask=key_mask, need_weights=True, average_weights=False)
        mine, w_mine = cross_attention_output(m, query, memory, key_mask)
    assert_close(mine, out, **TOL)
    assert_close(w_mine, w, **TOL)


def test_hard_rows_are_one_hot_at_the_soft_argmax_and_hand_over_that_one_value():
    from attn.book.cross_attention import cross_attention_output

    m, query, memory, key_mask = _cross_module_and_inputs(seed=1)
    B, L, D = query.shape
    H, E = m.num_heads, m.d_head
    with torch.no_grad():
        _, soft = cross_attention_output(m, query, memory, key_mask)
        out, hard = cross_attention_output(m, query, memory, key_mask, hard=True)
        v = (memory @ m.in_proj.weight[2 * D:].T + m.in_proj.bias[2 * D:]).view(B, -1, H, E)  # (B, S, H, E)
        idx = soft.argmax(-1)  # (B, H, L)
        picked = torch.stack([v[b, idx[b, h], h] for b in range(B) for h in range(H)]).view(B, H, L, E)
        expected = m.out_proj(picked.transpose(1, 2).reshape(B, L, D))
    assert set(hard.unique().tolist()) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    assert torch.equal(hard.argmax(-1), idx)
    assert (hard * ~key_mask[:, None, None, :]).sum() == 0  # never on a padded key
    assert_close(out, expected, **TOL)


def _dates_model(seed=0):
    task = DateTask()
    torch.manual_seed(seed)
    model = Seq2Seq(len(task.src_vocab), len(task.tgt_vocab), d_model=32, num_heads=4, max_len=32).eval()
    src, tin, _, lengths = task.batch(task.sample(6, seed=seed + 3))
    return model, src, tin, masks.padding(lengths)[:, 0]


def test_hard_cross_attention_hooks_every_cross_attention_and_leaves_no_hook_behind():
    from attn.book.cross_attention import cross_attention_output, hard_cross_attention

    model, src, tin, key_mask = _dates_model()
    seen = []  # (module, query, memory, key_mask, output) of each cross-attention call

    def spy(module, args, kwargs, output):  # registered after the hardening hook: sees its output
        seen.append((module, args[0], args[1], kwargs.get("key_mask"), output[0]))

    with torch.no_grad():
        before = model(src, tin, key_mask)
        with hard_cross_attention(model):
            spies = [m.register_forward_hook(spy, with_kwargs=True)
                     for n, m in model.named_modules() if n.endswith("cross_attn")]
            hard = model(src, tin, key_mask)
            for h in spies:
                h.remove()
        assert_close(model(src, tin, key_mask), before)  # hooks removed on exit
        assert (hard - before).abs().max() > 1e-3  # hardening changes the logits
        assert len(seen) == 2  # both decoder layers
        for module, query, memory, km, out in seen:
            assert_close(out, cross_attention_output(module, query, memory, km, hard=True)[0])


def test_hard_is_the_zero_temperature_limit_of_soft():
    from attn.book.cross_attention import cross_attention_output

    m, query, memory, key_mask = _cross_module_and_inputs(seed=2)
    D = m.d_model
    with torch.no_grad():
        m.in_proj.weight[:D] *= 1e4  # queries 1e4 times sharper: the softmax becomes one-hot
        m.in_proj.bias[:D] *= 1e4
        soft, _ = cross_attention_output(m, query, memory, key_mask)
        hard, _ = cross_attention_output(m, query, memory, key_mask, hard=True)
    assert_close(soft, hard, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("cache", [{}, {"cross_cache": False}, {"use_cache": False}])
def test_hardened_generation_is_the_same_with_every_cache_setting(cache):
    from attn.book.cross_attention import hard_cross_attention

    model, src, _, key_mask = _dates_model(seed=1)
    kw = dict(src_key_mask=key_mask, start_id=CharVocab.BOS, eos_id=CharVocab.EOS)
    with hard_cross_attention(model), torch.no_grad():
        reference = model.generate(src, 11, use_cache=False, **kw)
        tokens = model.generate(src, 11, **kw, **cache)
    assert torch.equal(tokens, reference)


def test_hardening_helpers_name_their_bad_arguments():
    from attn.book.cross_attention import cross_attention_output, hard_cross_attention

    m, query, memory, key_mask = _cross_module_and_inputs()
    with pytest.raises(ValueError, match="cross_attn"):
        hard_cross_attention(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="module"):
        cross_attention_output(torch.nn.Linear(8, 8), query, memory)
    with pytest.raises(ValueError, match="memory"):
        cross_attention_output(m, query, memory[..., :4])
    with pytest.raises(ValueError, match="key_mask"):
        cross_attention_output(m, query, memory, key_mask[:, :3])


def test_decoder_loss_reaches_the_encoder_only_through_the_memory():
    model, src, tin, key_mask = _dates_model(seed=2)
    encoder = [*model.src_embed.parameters(), *model.transformer.encoder.parameters()]
    norms = {}
    for cut in (False, True):
        memory = model.encode(src, key_mask)  # (B, S, D)
        logits = model.decode(tin, memory.detach() if cut else memory, key_mask)
        loss = logits.logsumexp(-1).mean()
        grads = torch.autograd.grad(loss, encoder, allow_unused=True, materialize_grads=True)
        norms[cut] = torch.cat([g.flatten() for g in grads]).norm().item()
    assert norms[False] > 1e-3 and norms[True] == 0.0
