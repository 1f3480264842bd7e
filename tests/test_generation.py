"""attn.generation: one ``generate`` for every decoder, one convention, checked against plain loops."""

import importlib
import inspect
import math

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
    (dict(cross_cache="yes"), ValueError, r"cross_cache must be True or False, got 'yes'"),
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
    message = message.replace("(prompt|src)", "src" if name in ENCODER_DECODER else "prompt")  # its own word
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

    generation.decode(step, prompt, 3, **({} if cached is None else {"cached": cached}))
    return seen


def test_small_cached_steps_run_on_one_thread_and_the_thread_count_is_restored():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert _threads_seen(PROMPT, cached=True) == [2, 1, 1]  # the prompt on every thread, then one
        assert torch.get_num_threads() == 2
        assert _threads_seen(PROMPT, cached=False) == [2, 2, 2]  # recomputation keeps every thread
        assert _threads_seen(PROMPT, cached=None) == [2, 2, 2]  # decode's default: not cached
        most = PROMPT.new_zeros(generation.SMALL_STEP_ROWS, 4)
        assert _threads_seen(most, cached=True) == [2, 1, 1]  # "at most SMALL_STEP_ROWS rows"
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
    first = "the start token" if name in ENCODER_DECODER else f"prompt length {start}"
    with pytest.raises(ValueError) as e:
        _generate(name, model, limit + 1 - start)
    assert str(e.value) == (f"{first} + max_new_tokens {limit + 1 - start} = {limit + 1} exceeds the {limit} "
                            f"positions of {name} (max_len)")
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
    with pytest.raises(TypeError) as e:  # every one given is named
        ALL[name]().generate(PROMPT, 2, start_id=0, cross_cache=False)
    assert str(e.value) == (f"{name} is a decoder-only model: start_id, cross_cache applies to encoder-decoder models "
                            "only (the prompt is the decoder's own start)")


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.bool])
def test_decode_refuses_a_prompt_of_anything_but_integer_token_ids_naming_the_prompt(dtype):
    """decode checks its own arguments (it is public: any step can drive it), and calls them the prompt."""
    with pytest.raises(TypeError) as e:
        generation.decode(lambda tokens, _new: torch.zeros(tokens.shape[0], V), PROMPT.to(dtype), 2)
    assert str(e.value) == f"prompt must hold integer token ids, got dtype {dtype}"


def _draws(logits, n, **kw):
    """``n`` tokens drawn by next_token for each row of ``logits``, one call per draw: (n, B)."""
    g = torch.Generator().manual_seed(0)
    return torch.stack([generation.next_token(logits, generator=g, **kw) for _ in range(n)])


def test_sampling_follows_the_softmax_of_the_logits_divided_by_the_temperature():
    """Two tokens with logits 0 and ln 9: at temperature 2 the second has probability
    3 / (1 + 3) = 0.75 (softmax(logits / 2) = (1, 3) / 4), at temperature 1 0.9, at 0.5 81/82."""
    logits = torch.tensor([[0.0, math.log(9.0)]]).expand(2000, 2)  # 2000 independent rows
    for temperature, p in ((2.0, 0.75), (1.0, 0.9), (0.5, 81 / 82)):
        share = _draws(logits, 1, temperature=temperature).float().mean().item()
        assert abs(share - p) < 0.03, (temperature, share, p)  # 0.03 is over 3 standard deviations


def test_top_k_samples_exactly_the_k_most_likely_tokens_and_every_token_when_k_exceeds_the_vocabulary():
    logits = torch.tensor([[3.0, 0.0, 2.9, 2.8, 0.1, 0.2]])  # one row: the three best are 0, 2, 3
    assert set(_draws(logits, 200, temperature=1.0, top_k=3).flatten().tolist()) == {0, 2, 3}
    flat = torch.zeros(2, 6)
    assert set(_draws(flat, 200, temperature=1.0, top_k=50).flatten().tolist()) == set(range(6))
    one = torch.zeros(3, 1)  # a vocabulary of one token: sampling can only return it
    assert _draws(one, 2, temperature=1.0).tolist() == [[0, 0, 0], [0, 0, 0]]


def test_the_names_that_moved_out_of_the_module_still_resolve_with_a_warning():
    from attn import _moved

    for name, new in _moved.NAMES["attn.generation"].items():
        with pytest.warns(DeprecationWarning, match=rf"attn\.generation\.{name} has moved to {new}\.{name}"):
            assert getattr(generation, name) is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match="module 'attn.generation' has no attribute 'nope'"):
        generation.nope  # noqa: B018


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=-0.5), "temperature must be at least 0 (0 and None: greedy), got -0.5"),
    (dict(top_k=0), "top_k must be a positive integer (or None: every token), got 0"),
    (dict(eos_id=1.0), "eos_id must be an integer (a token id, or None), got 1.0"),
    (dict(pad_id="0"), "pad_id must be an integer (a token id, or None), got '0'"),
])
def test_decode_checks_the_arguments_of_the_choice_and_of_stopping(kwargs, message):
    with pytest.raises(ValueError) as e:
        generation.decode(lambda tokens, _new: torch.zeros(tokens.shape[0], V), PROMPT, 2, **kwargs)
    assert str(e.value) == message


class Scripted(generation.GenerationMixin):
    """The smallest decoder the mixin asks for: row ``b`` emits ``script[b][n]`` as its ``n``-th new
    token (its logits are that token's one-hot), and each call notes the threads it ran on."""

    vocab_size, max_positions = V, None

    def __init__(self, script, defaults=None):
        self.script, self.defaults, self.threads = torch.tensor(script), defaults or {}, []

    def generation_defaults(self):
        return dict(self.defaults)

    def new_caches(self, capacity):  # noqa: ARG002  (nothing to keep: the script knows the position)
        return []

    def _generation_context(self, prompt, src_key_mask):  # noqa: ARG002
        return None

    def _decoder_logits(self, tokens, context, caches, past):  # noqa: ARG002
        self.threads.append(torch.get_num_threads())
        n = past + tokens.shape[1] - PROMPT.shape[1]  # how many tokens were generated before this one
        logits = torch.zeros(*tokens.shape, V)
        logits[:, -1] = torch.nn.functional.one_hot(self.script[:, n], V).float()
        return logits  # (B, T, V)


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_models_default_end_and_pad_tokens_stop_and_pad_its_rows(use_cache):
    """eos_id and pad_id default to the model's own (generation_defaults, as T5's configuration
    gives them); given ones win, and eos_id=-1 never stops."""
    model = Scripted([[5, 1, 7, 7], [6, 6, 1, 7]], defaults={"eos_id": 1, "pad_id": 0})
    out = model.generate(PROMPT, 4, use_cache=use_cache)
    assert out[:, 4:].tolist() == [[5, 1, 0], [6, 6, 1]]  # row 0 padded with 0; both done after 3
    assert model.generate(PROMPT, 4, pad_id=9, use_cache=use_cache)[:, 4:].tolist() == [[5, 1, 9], [6, 6, 1]]
    assert model.generate(PROMPT, 4, eos_id=6, use_cache=use_cache)[:, 4:].tolist() == [[5, 1, 7, 7], [6, 0, 0, 0]]
    assert model.generate(PROMPT, 4, eos_id=-1, use_cache=use_cache)[:, 4:].tolist() == [[5, 1, 7, 7], [6, 6, 1, 7]]
    plain = Scripted([[5, 1, 7, 7], [6, 6, 1, 7]])  # no defaults: no end token, exactly max_new_tokens
    assert plain.generate(PROMPT, 4, use_cache=use_cache)[:, 4:].tolist() == [[5, 1, 7, 7], [6, 6, 1, 7]]


def test_generate_runs_small_cached_steps_on_one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cached, uncached = Scripted([[5, 5, 5]] * 2), Scripted([[5, 5, 5]] * 2)
        cached.generate(PROMPT, 3)
        uncached.generate(PROMPT, 3, use_cache=False)
        assert cached.threads == [2, 1, 1] and uncached.threads == [2, 2, 2]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("name", ENCODER_DECODER)
def test_a_masked_padding_of_the_source_does_not_change_the_generated_tokens(name):
    """src_key_mask reaches the encoder and the cross-attention: junk after the real source tokens,
    masked, is invisible; unmasked, it changes what is generated."""
    model = ALL[name]()
    kw = dict(start_id=0, eos_id=-1) if name == "T5" else dict(start_id=0)
    junk = torch.randint(0, V, (2, 10), generator=torch.Generator().manual_seed(5))
    padded = torch.cat([PROMPT, junk], 1)  # (2, 14): the real source, then 10 padding positions
    real = (torch.arange(14) < 4).expand(2, 14)  # (B, S): True on the real tokens
    expected = model.generate(PROMPT, 8, **kw)
    for use_cache in (True, False):
        assert torch.equal(model.generate(padded, 8, src_key_mask=real, use_cache=use_cache, **kw), expected)
    if name == "Seq2Seq":  # (this small T5 happens to say the same with and without the junk)
        assert not torch.equal(model.generate(padded, 8, **kw), expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device: the prompt's device decides")
def test_generation_runs_on_the_device_of_the_model_and_the_prompt():
    """decode's finished-rows flags and an encoder-decoder's start tokens are made where the prompt is."""
    def step(tokens, _new):  # row 0 emits eos (2) at once, row 1 at its second step
        logits = torch.zeros(2, V, device=tokens.device)
        logits[0, 2] = 1
        logits[1, 2 if tokens.shape[1] > PROMPT.shape[1] else 5] = 1
        return logits

    out = generation.decode(step, PROMPT.cuda(), 5, eos_id=2, pad_id=0)
    assert out.device.type == "cuda" and out[:, 4:].tolist() == [[2, 0], [5, 2]]
    for name in ALL:
        model = ALL[name]()
        kw = {} if name in DECODER_ONLY else {"start_id": 0, "eos_id": -1}
        expected = model.generate(PROMPT, 5, **kw)
        got = model.cuda().generate(PROMPT.cuda(), 5, **kw)
        assert got.device.type == "cuda" and torch.equal(got.cpu(), expected)
