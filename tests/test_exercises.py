"""attn.book.exercises: each checker accepts a correct answer and rejects the classic wrong ones with a reason."""

import math

import torch

from attn import masks
from attn.book import exercises
from attn.positional import sinusoidal_table


def reference_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return w @ v


def test_correct_attention_passes_and_the_verdict_reads_well():
    v = exercises.check_attention(reference_attention)
    assert v, repr(v)
    assert repr(v).startswith("scaled dot-product attention: correct (5/5 cases pass)")
    assert "<table>" in v._repr_html_()


def test_attention_without_the_scale_fails_with_numbers():
    # no 1/sqrt(E): the same as scaling q up by sqrt(E) before the correct function
    v = exercises.check_attention(lambda q, k, v_, mask=None: reference_attention(q * math.sqrt(q.shape[-1]), k, v_, mask))
    assert not v
    assert "FAIL" in repr(v) and "not yet" in repr(v)


def test_attention_that_gives_nan_on_a_fully_masked_row_fails_that_case_only():
    def nan_rows(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, -1) @ v

    v = exercises.check_attention(nan_rows)
    failed = [case for case, ok, _ in v.cases if not ok]
    assert failed == ["a fully masked row gives zeros, not NaN"]


def test_a_checker_reports_an_exception_instead_of_raising():
    v = exercises.check_causal_mask(lambda _n: 1 / 0)
    assert not v and "ZeroDivisionError" in repr(v)


def test_mask_checkers_accept_the_answer_and_reject_the_inverted_convention():
    assert exercises.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril())
    inverted = exercises.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).triu(1))
    assert not inverted and "entries differ" in repr(inverted)
    assert not exercises.check_causal_mask(lambda n: torch.ones(n, n).tril())  # float, not bool
    ok = exercises.check_padding_mask(lambda lengths, S: torch.arange(S) < torch.tensor(lengths)[:, None])
    assert ok, repr(ok)
    assert not exercises.check_padding_mask(lambda lengths, S: torch.arange(S) >= torch.tensor(lengths)[:, None])


def test_table_and_head_split_checkers():
    assert exercises.check_sinusoidal_table(sinusoidal_table)
    swapped = exercises.check_sinusoidal_table(lambda n, d: sinusoidal_table(n, d).flip(-1))
    assert not swapped
    assert exercises.check_split_heads(lambda x, h: x.view(*x.shape[:2], h, -1).transpose(1, 2))
    bare = exercises.check_split_heads(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1))
    assert not bare, "a reshape without the transpose mixes positions into heads"
    assert masks.causal(3).dtype == torch.bool


def test_every_checker_named_in_a_chapter_exists_and_the_chapters_solutions_pass_it():
    """The solutions in the chapters' dropdowns that call a checker run, and the checker accepts them."""
    import json
    import re

    from scripts import notebooks

    import attn

    used = set()
    for path in notebooks.chapters():
        nb = json.loads(path.read_text())
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        code_cells = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        used |= set(re.findall(r"book\.exercises\.(check_\w+)\(", code_cells))  # the capstone's checker cells
        for block in re.findall(r":::\{dropdown\} Solution\n(.*?)\n:::", text, flags=re.S):
            for code in re.findall(r"```python\n(.*?)```", block, flags=re.S):
                if "attn.book.exercises.check_" in code:
                    used |= set(re.findall(r"attn\.book\.exercises\.(check_\w+)", code))
                    exec(compile(code, f"{path.name}: solution", "exec"),
                         {"attn": attn, "torch": torch, "math": math})
    assert used == {n for n in exercises.__all__ if n.startswith("check_")}, "every checker is used by a chapter"


# --- build it yourself: the layer, the block and the GPT of book/build_it_yourself.ipynb -------------
# A reader's answer in the layout the checkers document, and the classic wrong ones, each rejected.

from torch import nn  # noqa: E402


class MyMHA(nn.Module):
    def __init__(self, d_model, num_heads, attend=reference_attention):
        super().__init__()
        self.h, self.attend = num_heads, attend
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, t):
        B, L, _ = t.shape
        return t.view(B, L, self.h, -1).transpose(1, 2)  # (B, H, L, E)

    def merge(self, z):
        B, _, L, _ = z.shape
        return self.W_o(z.transpose(1, 2).reshape(B, L, -1))  # (B, L, D)

    def forward(self, x, mask=None):
        return self.merge(self.attend(self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x)), mask))


class MyBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MyMHA(d_model, num_heads)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(approximate="tanh"), nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def mask(self, x):
        return masks.causal(x.shape[1])

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x), self.mask(x)))
        return x + self.drop(self.ff(self.ln2(x)))


class MyGPT(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, max_len, dropout=0.0, block=MyBlock, tie=True):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(vocab_size, d_model), nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(block(d_model, num_heads, 4 * d_model, dropout) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.drop = nn.Dropout(dropout)
        if tie:
            self.head.weight = self.tok_emb.weight

    def positions(self, tokens):
        return self.pos_emb(torch.arange(tokens.shape[1]))

    def forward(self, tokens):
        x = self.drop(self.tok_emb(tokens) + self.positions(tokens))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


class MyLayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


def my_cached_forward(model, tokens, caches):
    """The reader's cached pass, written against MyGPT: keys and values appended per block."""
    past = caches[0]["k"].shape[2] if caches[0] else 0
    L = tokens.shape[1]
    x = model.tok_emb(tokens) + model.pos_emb(torch.arange(past, past + L))
    for block, cache in zip(model.blocks, caches, strict=True):
        a = block.attn
        h = block.ln1(x)
        q, k, v = a.split(a.W_q(h)), a.split(a.W_k(h)), a.split(a.W_v(h))
        if cache:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        cache["k"], cache["v"] = k, v
        mask = torch.ones(L, past + L, dtype=torch.bool).tril(diagonal=past)
        x = x + a.merge(reference_attention(q, k, v, mask))
        x = x + block.ff(block.ln2(x))
    return model.head(model.ln_f(x))


def test_build_checkers_accept_a_correct_layer_block_and_gpt():
    for check, answer in [(exercises.check_multi_head, MyMHA), (exercises.check_block, MyBlock),
                          (exercises.check_gpt, MyGPT)]:
        v = check(answer)
        assert v, repr(v)
        assert "correct" in v.summary and "FAIL" not in repr(v)
    sdpa = lambda q, k, v, mask=None: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # noqa: E731
    assert exercises.check_multi_head(lambda d, h: MyMHA(d, h, sdpa))


def test_attention_with_the_inverted_mask_meaning_fails():
    v = exercises.check_attention(lambda q, k, v_, mask=None: reference_attention(q, k, v_, None if mask is None else ~mask))
    failed = {case for case, ok, _ in v.cases if not ok}
    assert "causal boolean mask" in failed and not v


def test_multi_head_checker_rejects_a_bare_reshape_no_output_projection_and_no_scale():
    class BareReshape(MyMHA):
        def split(self, t):
            return t.reshape(t.shape[0], self.h, t.shape[1], -1)  # mixes positions into heads

    class NoOutput(MyMHA):
        def merge(self, z):
            return z.transpose(1, 2).reshape(z.shape[0], z.shape[2], -1)  # forgets W_o

    no_scale = lambda q, k, v, mask=None: reference_attention(q * math.sqrt(q.shape[-1]), k, v, mask)  # noqa: E731
    for wrong in (BareReshape, NoOutput, lambda d, h: MyMHA(d, h, no_scale)):
        v = exercises.check_multi_head(wrong)
        assert not v and "not yet" in v.summary, repr(v)
    # with one head a bare reshape is right: only the cases with H > 1 fail
    v = exercises.check_multi_head(BareReshape)
    assert [ok for case, ok, _ in v.cases if "H=1" in case] == [True]


def test_block_checker_rejects_no_residual_post_ln_and_no_causal_mask():
    class NoResidual(MyBlock):
        def forward(self, x):
            x = self.attn(self.ln1(x), self.mask(x))
            return x + self.ff(self.ln2(x))

    class PostLN(MyBlock):
        def forward(self, x):
            x = self.ln1(x + self.attn(x, self.mask(x)))
            return self.ln2(x + self.ff(x))

    class NotCausal(MyBlock):
        def mask(self, x):  # noqa: ARG002
            return None

    class SwappedNorms(MyBlock):
        def forward(self, x):
            x = x + self.attn(self.ln2(x), self.mask(x))
            return x + self.ff(self.ln1(x))

    for wrong in (NoResidual, PostLN, NotCausal, SwappedNorms):
        v = exercises.check_block(wrong)
        assert not v, f"{wrong.__name__}: {v!r}"


def test_gpt_checker_rejects_an_untied_head_missing_positions_and_a_wrong_block():
    untied = exercises.check_gpt(lambda *a: MyGPT(*a, tie=False))
    assert not untied and "head.weight is not tok_emb.weight" in repr(untied)

    class NoPositions(MyGPT):
        def positions(self, tokens):  # noqa: ARG002
            return 0.0

    assert not exercises.check_gpt(NoPositions)

    class NotCausal(MyBlock):
        def mask(self, x):  # noqa: ARG002
            return None

    assert not exercises.check_gpt(lambda *a: MyGPT(*a, block=NotCausal))
    broken = exercises.check_gpt(lambda *_: 1 / 0)
    assert not broken and "ZeroDivisionError" in repr(broken)


def test_layer_norm_checker_accepts_a_hand_written_norm_and_rejects_the_unbiased_variance():
    assert exercises.check_layer_norm(MyLayerNorm)

    class Unbiased(MyLayerNorm):
        def forward(self, x):
            mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True)  # divides by D - 1
            return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

    class NoAffine(MyLayerNorm):
        def forward(self, x):
            return torch.nn.functional.layer_norm(x, x.shape[-1:])

    for wrong in (Unbiased, NoAffine):
        assert not exercises.check_layer_norm(wrong)


def test_block_and_gpt_checkers_reject_dropout_left_on_in_eval_or_missing():
    class AlwaysOn(MyBlock):
        def forward(self, x):
            x = x + torch.nn.functional.dropout(self.attn(self.ln1(x), self.mask(x)), self.drop.p, training=True)
            return x + self.ff(self.ln2(x))

    class NoDropout(MyBlock):
        def forward(self, x):
            x = x + self.attn(self.ln1(x), self.mask(x))
            return x + self.ff(self.ln2(x))

    for wrong in (AlwaysOn, NoDropout):
        v = exercises.check_block(wrong)
        assert not v and "dropout" in repr(v), repr(v)
    exact_gelu = exercises.check_block(lambda *a, **k: _exact_gelu(MyBlock(*a, **k)))
    assert not exact_gelu, "GPT-2's tanh GELU is required: the shipped weights were trained with it"


def _exact_gelu(block):
    block.ff[1] = nn.GELU()
    return block


def test_an_unwritten_scaffold_gives_one_useful_message_not_an_exception():
    class MultiHeadAttention(nn.Module):
        def __init__(self, d_model, num_heads):  # noqa: ARG002
            super().__init__()
            self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

        def forward(self, x, mask=None):
            raise NotImplementedError("step 2: split the heads, attend, merge")

    v = exercises.check_multi_head(MultiHeadAttention)
    assert not v
    assert repr(v) == ("multi-head attention: not yet. step 2 is not written yet: "
                       "`MultiHeadAttention.forward` raises NotImplementedError; fill in its body above")

    def attention(q, k, v, mask=None):
        raise NotImplementedError
    assert "this step is not written yet: `attention`" in repr(exercises.check_attention(attention))


def test_kv_cache_and_causality_checkers():
    torch.manual_seed(0)
    model = MyGPT(11, 8, 2, 2, 16).eval()
    assert exercises.check_kv_cache(my_cached_forward, model)
    assert exercises.check_causality(model)

    def no_cache(model, tokens, caches):  # noqa: ARG001  (forgets the past: each step sees itself only)
        return model(tokens)

    assert not exercises.check_kv_cache(no_cache, model)
    leaky = MyGPT(11, 8, 2, 2, 16, block=_leaky_block).eval()
    v = exercises.check_causality(leaky)
    assert not v and "changed when token" in repr(v)


def _leaky_block(*a):
    class Leaky(MyBlock):
        def mask(self, x):  # noqa: ARG002
            return None

    return Leaky(*a)
