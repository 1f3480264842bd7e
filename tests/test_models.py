"""Models, data generators and the training loop: caches change speed, never results; data is
deterministic for a seed and carries the right ground truth."""

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import attn
from attn.book import data
from attn.models import Seq2Seq, TokenModel


def test_kv_recall_is_deterministic_and_its_targets_are_right():
    task = data.KVRecall(num_keys=5, num_values=4, num_queries=3)
    a = data.kv_recall(50, task, seed=3)
    b = data.kv_recall(50, task, seed=3)
    c = data.kv_recall(50, task, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True)) and not torch.equal(a[0], c[0])
    tokens, targets, kind = a
    for seq, tgt, knd in zip(tokens.tolist(), targets.tolist(), kind.tolist(), strict=True):
        pairs = {t // task.num_values: t % task.num_values for t in seq[: task.num_keys]}
        assert sorted(pairs) == list(range(task.num_keys)), "every key appears once"
        for i in range(1, task.num_keys):
            assert knd[i] == 1 and tgt[i] == seq[i - 1] % task.num_values
        for i in range(task.num_keys, task.seq_len):
            key = seq[i] - task.num_keys * task.num_values
            assert knd[i] == 2 and tgt[i] == pairs[key]
        assert tgt[0] == data.IGNORE


def test_dates_round_trip_and_alignment():
    task = data.DateTask()
    pairs = task.sample(200, seed=1)
    assert pairs == task.sample(200, seed=1)
    import datetime

    for src, tgt in pairs:
        assert datetime.datetime.strptime(src, "%d %B %Y").strftime("%Y-%m-%d") == tgt
        A = task.alignment(src, tgt)
        assert A.shape == (len(tgt), len(src))
        for t in (0, 1, 2, 3):  # year digits are copied from the source's last four characters
            assert src[A[t].argmax()] == tgt[t]
        assert A[4].sum() == 0 and A[7].sum() == 0  # hyphens come from nowhere
    src, tin, tout, lengths = task.batch(pairs[:4])
    assert (tin[:, 0] == data.CharVocab.BOS).all()
    assert task.tgt_vocab.decode(tout[0]) == pairs[0][1]
    assert task.src_vocab.decode(src[0]) == pairs[0][0]
    assert lengths.tolist() == [len(s) for s, _ in pairs[:4]]
    with pytest.raises(ValueError, match=r"characters not in the vocabulary: \['x'\]"):
        task.tgt_vocab.encode("x")


def test_english_text_is_real_and_stable():
    text = data.english_text()
    assert len(text) > 100_000 and " the " in text and text == data.english_text()
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyz0123456789 .,;:'()-")


def test_english_text_is_the_frozen_corpus_whatever_the_python():
    """The chapters and checkpoints were made on this exact text: it must not follow the running
    Python's pydoc_data (3.12 ships other topics). The hash is of the decompressed text."""
    import hashlib

    text = data.english_text()
    assert len(text) == 409_405
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == "70015d8f9db13e2d"
    assert data.english_text(1000) == text[:1000]


def test_lm_generation_with_kv_cache_gives_the_same_tokens():
    torch.manual_seed(0)
    model = TokenModel(30, d_model=32, num_heads=4, num_layers=2, is_causal=True, max_len=64).eval()
    prompt = torch.randint(0, 30, (2, 5))
    assert torch.equal(model.generate(prompt, 20, use_cache=True), model.generate(prompt, 20, use_cache=False))


def test_lm_teacher_forcing_equals_step_by_step_logits():
    torch.manual_seed(0)
    model = TokenModel(30, d_model=32, num_heads=4, num_layers=2, is_causal=True, max_len=64).eval()
    x = torch.randint(0, 30, (2, 12))
    with torch.no_grad():
        parallel = model(x)
        caches = model.new_caches()
        steps = torch.cat([model(x[:, t : t + 1], caches=caches) for t in range(12)], 1)
        no_cache = torch.stack([model(x[:, : t + 1])[:, -1] for t in range(12)], 1)
    assert_close(steps, parallel, atol=1e-5, rtol=1e-5)
    assert_close(no_cache, parallel, atol=1e-5, rtol=1e-5)


def test_seq2seq_generation_is_identical_with_every_cache_setting():
    torch.manual_seed(0)
    model = Seq2Seq(20, 15, d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2).eval()
    src = torch.randint(3, 20, (3, 9))
    key_mask = attn.masks.padding([9, 6, 4])[:, 0]
    kw = dict(src_key_mask=key_mask, start_id=1, eos_id=2)
    outs = [model.generate(src, 12, **kw, **c) for c in ({}, {"cross_cache": False}, {"use_cache": False})]
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])
    assert (outs[0][:, 0] == 1).all()  # the start token comes first


def test_padded_source_keys_get_zero_cross_attention():
    torch.manual_seed(0)
    model = Seq2Seq(20, 15, d_model=32, num_heads=4).eval()
    src = torch.randint(3, 20, (2, 7))
    key_mask = attn.masks.padding([7, 3])[:, 0]
    with attn.record_attention(model) as rec, torch.no_grad():
        model(src, torch.randint(3, 15, (2, 5)), key_mask)
    w = rec["transformer.decoder.layers.0.cross_attn"]  # (B, H, L, S)
    assert (w[1, :, :, 3:] == 0).all() and (w[0] > 0).all()


def test_head_mask_ablation_silences_one_head():
    torch.manual_seed(0)
    m = attn.MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 5, 16)
    m.head_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
    out_ablated, _ = m(x)
    with attn.record_attention(m):
        m(x)
    z_w = m.out_proj.weight[:, 4:8]  # the output columns fed by head 1
    m.head_mask = None
    out_full, _ = m(x)
    assert not torch.allclose(out_full, out_ablated)
    # Removing head 1 by hand: subtract its contribution through out_proj.
    m.head_mask = torch.tensor([0.0, 1.0, 0.0, 0.0])
    only_head1, _ = m(x)
    assert_close(out_full - out_ablated, only_head1 - m.out_proj.bias, atol=1e-5, rtol=1e-5)
    assert z_w.shape == (16, 4)


def test_training_loop_learns_a_trivial_task_and_is_deterministic():
    def run():
        torch.manual_seed(0)
        model = TokenModel(10, d_model=16, num_heads=2, num_layers=1, max_len=8)
        batch = lambda step: torch.randint(0, 10, (32, 8), generator=torch.Generator().manual_seed(step))  # noqa: E731
        loss = lambda m, x: F.cross_entropy(m(x).flatten(0, 1), x.flatten())  # noqa: E731
        return attn.book.train.train(model, batch, loss, steps=60, lr=1e-2, progress=False)

    a, b = run(), run()
    assert a == b
    assert a[-1] < 0.2 * a[0]


def _train_tiny(seed: int) -> list[float]:
    import attn

    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1)
    g = torch.Generator().manual_seed(seed)
    data = [(torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)) for _ in range(5)]
    return attn.book.train.train(model, data.__getitem__, lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
                            steps=5, seed=seed, progress=False)


def test_runs_side_by_side_give_the_serial_results_in_order():
    import attn

    serial = [_train_tiny(s) for s in (0, 1, 2)]
    assert attn.book.train.run_side_by_side(_train_tiny, (0, 1, 2), workers=2) == serial
    assert attn.book.train.run_side_by_side(_train_tiny, (0, 1, 2), workers=1) == serial
    assert serial[0] != serial[1]
