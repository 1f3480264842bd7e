"""attn.generation: one ``generate`` for every decoder, one convention, checked against plain loops."""

import inspect

import pytest
import torch

from attn import generation
from attn.models import Seq2Seq, TokenModel
from attn.variants import GPT, T5

V = 23


def token_model():
    torch.manual_seed(0)
    return TokenModel(V, d_model=16, num_heads=2, num_layers=2, is_causal=True, max_len=64).eval()


def gpt():
    torch.manual_seed(1)
    return GPT(V, d_model=16, num_heads=2, num_layers=2, max_len=64).eval()


def seq2seq():
    torch.manual_seed(2)
    return Seq2Seq(V, V, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=2).eval()


def t5():
    torch.manual_seed(3)
    return T5(V, d_model=16, num_heads=2, num_layers=2, eos_id=1, pad_id=0, decoder_start_id=0).eval()


DECODER_ONLY = {"TokenModel": token_model, "GPT": gpt}
ENCODER_DECODER = {"Seq2Seq": seq2seq, "T5": t5}
ALL = {**DECODER_ONLY, **ENCODER_DECODER}
PROMPT = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])


def _generate(name, model, max_new_tokens, **kw):
    if name in ENCODER_DECODER:
        kw.setdefault("start_id", 0)
        if name == "T5":
            kw.setdefault("eos_id", -1)  # never: T5 stops at its own eos_id by default
    return model.generate(PROMPT, max_new_tokens, **kw)


def _plain_greedy(name, model, max_new_tokens):
    """The loop every model used to write for itself: argmax over the whole prefix, concatenated."""
    with torch.no_grad():
        if name in DECODER_ONLY:
            out = PROMPT
            for _ in range(max_new_tokens):
                out = torch.cat([out, model(out)[:, -1].argmax(-1, keepdim=True)], 1)
            return out
        memory = model.encode(PROMPT)
        out = torch.zeros(PROMPT.shape[0], 1, dtype=torch.long)
        for _ in range(max_new_tokens):
            out = torch.cat([out, model.decode(out, memory)[:, -1].argmax(-1, keepdim=True)], 1)
        return out


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_a_plain_argmax_loop(name, use_cache):
    model = ALL[name]()
    got = _generate(name, model, 9, use_cache=use_cache)
    assert torch.equal(got, _plain_greedy(name, model, 9))


@pytest.mark.parametrize("name", ALL)
def test_temperature_none_and_zero_are_greedy(name):
    model = ALL[name]()
    assert torch.equal(_generate(name, model, 6, temperature=None), _generate(name, model, 6, temperature=0))
    assert torch.equal(_generate(name, model, 6), _generate(name, model, 6, temperature=0.0))


@pytest.mark.parametrize("name", ALL)
def test_every_decoder_has_the_same_generate_signature(name):
    params = inspect.signature(ALL[name]().generate).parameters
    first = list(params)[:2]
    assert first[1] == "max_new_tokens"
    for kw in ("temperature", "top_k", "eos_id", "pad_id", "generator", "use_cache"):
        assert params[kw].kind is inspect.Parameter.KEYWORD_ONLY, kw
    assert params["temperature"].default is None and params["top_k"].default is None


@pytest.mark.parametrize("name", ALL)
def test_sampling_is_seeded_and_the_same_with_and_without_cache(name):
    model = ALL[name]()
    kw = dict(temperature=2.0, top_k=5)
    a = _generate(name, model, 8, generator=torch.Generator().manual_seed(0), **kw)
    b = _generate(name, model, 8, generator=torch.Generator().manual_seed(0), use_cache=False, **kw)
    assert torch.equal(a, b)
    c = _generate(name, model, 8, generator=torch.Generator().manual_seed(1), **kw)
    assert not torch.equal(a, c)  # another seed, other tokens (23 tokens, 16 draws)


def test_top_k_one_is_greedy_at_any_temperature():
    model = gpt()
    sampled = model.generate(PROMPT, 8, temperature=10.0, top_k=1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(sampled, model.generate(PROMPT, 8))


def test_eos_finishes_a_row_which_is_then_padded_and_generation_stops_when_all_are_done():
    def step(tokens, _new):  # row 0 emits eos (2) at its second step, row 1 at its fourth
        t = tokens.shape[1] - PROMPT.shape[1]
        logits = torch.zeros(2, V)
        logits[0, 2 if t == 1 else 11] = 1
        logits[1, 2 if t == 3 else 12] = 1
        return logits

    out = generation.decode(step, PROMPT, 10, eos_id=2, pad_id=0)
    assert out[:, 4:].tolist() == [[11, 2, 0, 0], [12, 12, 12, 2]]  # stopped after the last eos
    out = generation.decode(step, PROMPT, 10, eos_id=2)  # pad_id defaults to eos_id
    assert out[0, 4:].tolist() == [11, 2, 2, 2]
    out = generation.decode(step, PROMPT, 10)  # without eos_id: exactly max_new_tokens
    assert out.shape == (2, 14)


def test_the_step_gets_the_prompt_first_then_one_new_token_at_a_time():
    seen = []

    def step(tokens, new):
        seen.append((tokens.shape[1], new))
        return torch.zeros(tokens.shape[0], V)

    out = generation.decode(step, PROMPT, 3)
    assert seen == [(4, 4), (5, 1), (6, 1)]
    assert torch.equal(out[:, :4], PROMPT) and (out[:, 4:] == 0).all()
    assert generation.decode(step, PROMPT, 0).equal(PROMPT)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(max_new_tokens=-1), ValueError, r"max_new_tokens must be a non-negative integer, got -1"),
    (dict(max_new_tokens=2.0), ValueError, r"max_new_tokens must be a non-negative integer, got 2.0"),
    (dict(top_k=0), ValueError, r"top_k must be a positive integer \(or None: every token\), got 0"),
    (dict(top_k=True), ValueError, r"top_k must be a positive integer \(or None: every token\), got True"),
    (dict(temperature=-0.5), ValueError, r"temperature must be at least 0 \(0 and None: greedy\), got -0.5"),
    (dict(temperature=True), ValueError, r"temperature must be a number, at least 0 \(0 and None: greedy\), got True"),
    (dict(use_cache="none"), ValueError, r"use_cache must be True or False, got 'none'"),
    (dict(max_new_tokens=True), ValueError, r"max_new_tokens must be a non-negative integer, got True"),
    (dict(eos_id=1.0), ValueError, r"eos_id must be an integer \(a token id, or None\), got 1.0"),
    (dict(pad_id="0"), ValueError, r"pad_id must be an integer \(a token id, or None\), got '0'"),
    (dict(pad_id=True), ValueError, r"pad_id must be an integer \(a token id, or None\), got True"),
    (dict(prompt=PROMPT.float()), TypeError, r"(prompt|src) must hold integer token ids, got dtype torch.float32"),
    (dict(prompt=PROMPT[0]), ValueError, r"(prompt|src) must have shape \(B, P\) with P >= 1, got \(4\)"),
    (dict(prompt=[[1, 2]]), TypeError, r"(prompt|src) must be a torch.Tensor, got list"),
])
def test_bad_generation_arguments_get_a_named_error(name, kwargs, error, message):
    model = ALL[name]()
    kwargs = {"prompt": PROMPT, "max_new_tokens": 3, **kwargs}
    if name in ENCODER_DECODER:
        kwargs["start_id"] = 0
    prompt, n = kwargs.pop("prompt"), kwargs.pop("max_new_tokens")
    with pytest.raises(error, match=message):
        model.generate(prompt, n, **kwargs)


@pytest.mark.parametrize("name", ENCODER_DECODER)
def test_a_start_id_that_is_not_an_integer_is_named(name):
    with pytest.raises(ValueError, match=r"start_id must be an integer \(a token id, or None\), got 0.5"):
        ALL[name]().generate(PROMPT, 3, start_id=0.5)


@pytest.mark.parametrize("name", ALL)
def test_a_prompt_out_of_the_vocabulary_is_named_by_every_decoder(name):
    arg = "src" if name in ENCODER_DECODER else "prompt"
    kw = {"start_id": 0} if name in ENCODER_DECODER else {}
    with pytest.raises(ValueError, match=rf"{arg} must lie in \[0, vocab_size=23\), got ids from -1 to 23"):
        ALL[name]().generate(torch.tensor([[3, 23], [-1, 4]]), 2, **kw)


def _threads_seen(prompt, cached):
    seen = []

    def step(tokens, _new):
        seen.append(torch.get_num_threads())
        return torch.zeros(tokens.shape[0], V)

    generation.decode(step, prompt, 3, cached=cached)
    return seen


def test_small_cached_steps_run_on_one_thread_and_the_thread_count_is_restored():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert _threads_seen(PROMPT, cached=True) == [2, 1, 1]  # the prompt on every thread, then one
        assert torch.get_num_threads() == 2
        assert _threads_seen(PROMPT, cached=False) == [2, 2, 2]  # recomputation keeps every thread
        big = PROMPT.new_zeros(generation.SMALL_STEP_ROWS + 1, 4)
        assert _threads_seen(big, cached=True) == [2, 2, 2]  # a large batch is real work per step

        def failing(tokens, new):
            if new == 1:
                raise RuntimeError("boom")
            return torch.zeros(tokens.shape[0], V)

        with pytest.raises(RuntimeError, match="boom"):
            generation.decode(failing, PROMPT, 3, cached=True)
        assert torch.get_num_threads() == 2  # restored after an error too
    finally:
        torch.set_num_threads(before)


# --- one generate, owned once -------------------------------------------------------------------------

def test_one_generate_is_shared_by_every_decoder_and_no_model_writes_its_own():
    import attn

    for factory in ALL.values():
        assert type(factory()).generate is generation.GenerationMixin.generate
    own = [f"{mod.__name__}.{name}" for mod in (attn.models, attn.variants, attn.blocks, attn.efficient)
           for name, obj in vars(mod).items()
           if isinstance(obj, type) and "generate" in vars(obj) and obj is not generation.GenerationMixin]
    assert own == [], "a decoder supplies its step; generate lives in attn.generation.GenerationMixin"


def _spy_caches(model):
    made = []
    original = model.new_caches

    def spy(*args, **kwargs):
        made.append((args, kwargs, original(*args, **kwargs)))
        return made[-1][2]

    model.new_caches = spy
    return made


@pytest.mark.parametrize("name", ALL)
def test_every_decoder_allocates_its_caches_once_for_the_whole_sequence(name):
    """The self-attention caches are sized for prompt + new tokens at the start and never grow."""
    model = ALL[name]()
    made = _spy_caches(model)
    out = _generate(name, model, 7)
    assert len(made) == 1
    caches = made[0][2]
    selfs = [c[0] if isinstance(c, tuple) else c for c in caches]
    total = (1 if name in ENCODER_DECODER else PROMPT.shape[1]) + 7
    assert out.shape[1] == total
    for cache in selfs:
        assert cache.capacity == total and len(cache) == total - 1  # the last token is emitted, never fed
        assert cache._buf[0].shape[-2] == total  # the one buffer allocated at the first step


@pytest.mark.parametrize("name", ENCODER_DECODER)
def test_every_encoder_decoder_can_reproject_its_memory_and_gets_the_same_tokens(name):
    model = ALL[name]()
    made = _spy_caches(model)
    all_cached = _generate(name, model, 8)
    self_only = _generate(name, model, 8, cross_cache=False)
    none = _generate(name, model, 8, use_cache=False)
    assert torch.equal(all_cached, self_only) and torch.equal(all_cached, none)
    assert [kw.get("cross") for _, kw, _ in made] == [True, False]
    assert all(cross is None for _, cross in made[1][2]) and all(cross.static for _, cross in made[0][2])


def test_an_encoder_decoder_without_a_start_token_of_its_own_asks_for_one():
    with pytest.raises(ValueError, match=r"Seq2Seq.generate needs start_id, the decoder's first token"):
        seq2seq().generate(PROMPT, 3)
    out = t5().generate(PROMPT, 3, eos_id=-1)  # T5's configuration names its start token (0)
    assert out[:, 0].tolist() == [0, 0] and out.shape == (2, 4)


def test_eos_minus_one_never_stops_early_even_where_the_model_names_an_end_token():
    model = t5()
    model.eos_id = int(model.generate(PROMPT, 1, eos_id=-1)[0, 1])  # the first token row 0 emits
    assert model.generate(PROMPT, 5).shape[1] < 6  # its own eos_id: row 0 finishes at once
    assert model.generate(PROMPT, 5, eos_id=-1).shape == (2, 6)


@pytest.mark.parametrize("name", ALL)
def test_a_sequence_longer_than_the_models_positions_is_refused_before_any_step(name):
    model = ALL[name]()
    limit = model.max_positions
    if limit is None:
        pytest.skip(f"{name} has relative positions: no limit")
    start = 1 if name in ENCODER_DECODER else PROMPT.shape[1]
    with pytest.raises(ValueError, match=rf"= {limit + 1} exceeds the {limit} positions of {name} \(max_len\)"):
        _generate(name, model, limit + 1 - start)
    assert _generate(name, model, limit - start).shape[1] == limit


@pytest.mark.parametrize("name", ALL)
def test_start_end_and_pad_ids_must_name_a_token_of_the_vocabulary(name):
    model = ALL[name]()
    for arg in ("eos_id", "pad_id") + (("start_id",) if name in ENCODER_DECODER else ()):
        with pytest.raises(ValueError, match=rf"{arg} must lie in \[0, vocab_size={V}\), got {V}"):
            _generate(name, model, 2, **{arg: V})


@pytest.mark.parametrize("name", DECODER_ONLY)
def test_a_decoder_only_model_refuses_an_encoder_decoders_arguments(name):
    for kw in (dict(src_key_mask=torch.ones(2, 4, dtype=torch.bool)), dict(start_id=0), dict(cross_cache=False)):
        with pytest.raises(TypeError, match=rf"{name} is a decoder-only model: {next(iter(kw))} applies to"):
            ALL[name]().generate(PROMPT, 2, **kw)
