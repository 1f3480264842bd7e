"""Checkers for the chapters' coding exercises: pass your function, get a clear verdict.

Each ``check_*`` function runs the reader's implementation on seeded inputs (several shapes, the
edge cases the chapter discusses) and compares it with the package's tested implementation or
with PyTorch's, using ``torch.testing.assert_close``. It never raises because the answer is wrong:
it returns a :class:`Verdict` that reads as text in a terminal and as a small table in a notebook,
and is true only when every case passes::

    def my_attention(q, k, v, mask=None):
        ...
    attn.book.exercises.check_attention(my_attention)   # Verdict: 5/5 cases pass
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from attn import masks
from attn._locale import ljust, translate
from attn.positional import sinusoidal_table

__all__ = [
    "Verdict",
    "check_attention",
    "check_block",
    "check_causal_mask",
    "check_causality",
    "check_gpt",
    "check_kv_cache",
    "check_layer_norm",
    "check_multi_head",
    "check_padding_mask",
    "check_sinusoidal_table",
    "check_split_heads",
]


@dataclass
class Verdict:
    """The result of one checker: one ``(case, passed, detail)`` row per case tried."""

    exercise: str
    cases: list[tuple[str, bool, str]] = field(default_factory=list)
    #: set when the reader's code raised ``NotImplementedError``: the scaffold is not filled in yet
    todo: str = ""

    def __bool__(self) -> bool:
        return bool(self.cases) and all(ok for _, ok, _ in self.cases)

    @property
    def summary(self) -> str:
        passed = sum(ok for _, ok, _ in self.cases)
        word = "correct" if self else "not yet"
        return translate(f"{self.exercise}: {word} ({passed}/{len(self.cases)} cases pass)")

    def __repr__(self) -> str:
        _ = translate  # the words in the reader's language (attn._locale; English: as written here)
        if self.todo:
            return f"{_(self.exercise + ': not yet.')} {_(self.todo)}"
        lines = [self.summary]
        for case, ok, detail in self.cases:
            lines.append(f"  {ljust(_('ok'), 4) if ok else _('FAIL')} {_(case)}" + ("" if ok else f"{_(': ')}{_(detail)}"))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        _ = translate
        if self.todo:
            return f"<p><b>{html.escape(_(self.exercise + ': not yet.'))}</b> {html.escape(_(self.todo))}</p>"
        rows = "".join(
            f"<tr><td>{'&#10003;' if ok else '&#10007;'}</td><td>{html.escape(_(case))}</td>"
            f"<td>{'' if ok else html.escape(_(detail))}</td></tr>"
            for case, ok, detail in self.cases
        )
        return f"<p><b>{html.escape(self.summary)}</b></p><table>{rows}</table>"


def _not_written(e: NotImplementedError) -> str:
    """What a scaffold that still raises ``NotImplementedError("step N: ...")`` means to the reader."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = "your code"
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f"`{getattr(code, 'co_qualname', code.co_name).split('<locals>.')[-1]}`"
    step = re.match(r"\s*(step \d+)", str(e))
    return (f"{step.group(1) if step else 'this step'} is not written yet: {where} raises "
            "NotImplementedError; fill in its body above")


def _failed(verdict: Verdict, case: str, e: Exception, prefix: str = "raised ") -> None:
    """Record the reader's exception ``e`` as a failed case (an unfilled scaffold says so once)."""
    if isinstance(e, NotImplementedError):
        verdict.todo = verdict.todo or _not_written(e)
        verdict.cases.append((case, False, "not written yet"))
    else:
        verdict.cases.append((case, False, f"{prefix}{type(e).__name__}: {e}"))


def _run(verdict: Verdict, case: str, answer: Callable[[], object], expected: torch.Tensor, **tol) -> None:
    """Call ``answer()``, compare with ``expected``, record the outcome (errors become details)."""
    try:
        got = answer()
    except Exception as e:  # the reader's code failing is a finding, not a crash of the checker
        _failed(verdict, case, e)
        return
    if isinstance(got, tuple):  # (output, weights) is a common return: check the output
        got = got[0]
    if not isinstance(got, torch.Tensor):
        verdict.cases.append((case, False, f"returned {type(got).__name__}, expected a tensor"))
        return
    if got.shape != expected.shape:
        verdict.cases.append((case, False, f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"))
        return
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        ok = got.dtype == expected.dtype and torch.equal(got, expected)
        detail = "" if ok else (f"dtype {got.dtype}, expected {expected.dtype}" if got.dtype != expected.dtype
                                else f"{int((got != expected).sum())} entries differ")
        verdict.cases.append((case, ok, detail))
        return
    try:
        torch.testing.assert_close(got.to(expected.dtype), expected, **tol)
        verdict.cases.append((case, True, ""))
    except AssertionError as e:
        first = str(e).strip().splitlines()
        verdict.cases.append((case, False, " ".join(first[:3])))


def check_attention(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(q, k, v, mask=None)``: scaled dot-product attention with a boolean mask.

    Shape: ``q`` ``(..., L, E)``, ``k`` ``(..., S, E)``, ``v`` ``(..., S, Ev)``, ``mask`` boolean
    broadcasting to ``(..., L, S)`` (``True`` = may attend); the output is ``(..., L, Ev)``. A query
    whose keys are all masked must give zeros, not NaN. ``fn`` may also return ``(output, weights)``.
    """
    v_ = Verdict("scaled dot-product attention")
    g = torch.Generator().manual_seed(0)
    tol = dict(rtol=1e-4, atol=1e-5)
    for L, S, E, Ev in [(3, 3, 4, 4), (2, 5, 8, 3)]:
        q, k, v = (torch.randn(2, n, d, generator=g) for n, d in [(L, E), (S, E), (S, Ev)])
        _run(v_, f"no mask, L={L}, S={S}, E={E}, Ev={Ev}", partial(fn, q, k, v),
             F.scaled_dot_product_attention(q, k, v), **tol)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    _run(v_, "batch and heads (B, H, L, E)", lambda: fn(q, k, v), F.scaled_dot_product_attention(q, k, v), **tol)
    q, k, v = (torch.randn(1, 5, 4, generator=g) for _ in range(3))
    causal = masks.causal(5)
    _run(v_, "causal boolean mask", lambda: fn(q, k, v, mask=causal),
         F.scaled_dot_product_attention(q, k, v, attn_mask=causal), **tol)
    rows = torch.tensor([[True, True, False, False, False], [False] * 5, [True] * 5, [True] * 5, [True] * 5])
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=rows)
    expected[:, 1] = 0.0  # a fully masked row gives zeros
    _run(v_, "a fully masked row gives zeros, not NaN", lambda: fn(q, k, v, mask=rows), expected, **tol)
    return v_


def check_causal_mask(fn: Callable[[int], torch.Tensor]) -> Verdict:
    """Check ``fn(n)``: the ``(n, n)`` boolean causal mask, ``True`` where query ``i`` may see key ``j <= i``."""
    v_ = Verdict("causal mask")
    for n in (1, 4, 7):
        _run(v_, f"n={n}", lambda n=n: fn(n), masks.causal(n))
    return v_


def check_padding_mask(fn: Callable[[list[int], int], torch.Tensor]) -> Verdict:
    """Check ``fn(lengths, S)``: a ``(B, S)`` boolean mask, ``True`` on each sequence's real tokens."""
    v_ = Verdict("padding mask")
    for lengths, S in [([3, 1], 4), ([5, 5, 2], 5), ([0, 2], 3)]:
        expected = masks.padding(lengths, S).reshape(len(lengths), S)
        _run(v_, f"lengths={lengths}, S={S}", lambda a=lengths, b=S: fn(a, b), expected)
    return v_


def check_sinusoidal_table(fn: Callable[[int, int], torch.Tensor]) -> Verdict:
    """Check ``fn(max_len, d_model)``: the ``(max_len, d_model)`` sinusoidal table, sin on even
    columns and cos on odd ones, frequencies ``1 / 10000^(2i / d_model)``."""
    v_ = Verdict("sinusoidal positional table")
    for max_len, d in [(4, 2), (16, 8), (50, 64)]:
        _run(v_, f"max_len={max_len}, d_model={d}", lambda a=max_len, b=d: fn(a, b),
             sinusoidal_table(max_len, d), rtol=1e-4, atol=1e-5)
    return v_


def check_split_heads(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> Verdict:
    """Check ``fn(x, num_heads)``: ``(B, L, D)`` to ``(B, H, L, E)`` with ``E = D / H``, head ``h``
    taking columns ``h*E .. (h+1)*E - 1`` (a ``view`` then a ``transpose``, not a bare reshape)."""
    v_ = Verdict("split heads")
    g = torch.Generator().manual_seed(1)
    for B, L, D, H in [(1, 3, 4, 2), (2, 5, 12, 3), (2, 4, 8, 8)]:
        x = torch.randn(B, L, D, generator=g)
        expected = x.view(B, L, H, D // H).transpose(1, 2)
        _run(v_, f"B={B}, L={L}, D={D}, H={H}", lambda x=x, H=H: fn(x, H), expected, rtol=0, atol=0)
    return v_


# --- build it yourself: the reader's layer, block and model, weights copied into the package's ----
# Each checker builds the reader's module, redraws its parameters from a seeded generator (so that a
# swapped LayerNorm or a missing bias cannot hide behind default initial values), copies them into
# the package's module and compares the outputs.

def _redraw(module: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():  # a tied matrix is drawn once
            p.copy_(0.3 * torch.randn(p.shape, generator=g))


def _linear(dst: nn.Linear, src: nn.Linear) -> None:
    dst.weight.copy_(src.weight)
    if dst.bias is not None:
        dst.bias.copy_(src.bias if src.bias is not None else torch.zeros_like(dst.bias))


def _to_package_mha(mine: nn.Module, theirs) -> None:
    """The reader's ``W_q, W_k, W_v, W_o`` into ``attn.MultiHeadAttention`` (``in_proj`` stacks the three)."""
    lin = [getattr(mine, name) for name in ("W_q", "W_k", "W_v")]
    theirs.in_proj.weight.copy_(torch.cat([m.weight for m in lin]))
    theirs.in_proj.bias.copy_(torch.cat([m.bias if m.bias is not None else torch.zeros(m.out_features) for m in lin]))
    _linear(theirs.out_proj, mine.W_o)


def _to_package_block(mine: nn.Module, theirs) -> None:
    """The reader's ``ln1, attn, ln2, ff`` into a pre-LN ``attn.blocks.EncoderLayer``."""
    _to_package_mha(mine.attn, theirs.self_attn)
    for dst, src in ((theirs.norm1, mine.ln1), (theirs.norm2, mine.ln2)):
        dst.load_state_dict(src.state_dict())
    linears = [m for m in mine.ff.modules() if isinstance(m, nn.Linear)]
    if len(linears) != 2:
        raise ValueError(f"ff must hold two nn.Linear layers (D -> d_ff -> D), found {len(linears)}")
    _linear(theirs.ff.linear1, linears[0])
    _linear(theirs.ff.linear2, linears[1])


def _built(verdict: Verdict, case: str, make: Callable[[], nn.Module], copy, package: nn.Module, seed: int):
    """Build the reader's module and copy it into ``package``; a failure becomes a failed case."""
    try:
        mine = make()
        _redraw(mine, seed)
        with torch.no_grad():
            copy(mine, package)
    except Exception as e:
        _failed(verdict, case, e, prefix="")
        return None
    return mine.eval()


def check_multi_head(cls: Callable[..., nn.Module]) -> Verdict:
    """Check ``cls(d_model, num_heads)``: multi-head self-attention with four ``nn.Linear(D, D)``
    called ``W_q``, ``W_k``, ``W_v``, ``W_o`` and ``forward(x, mask=None)``.

    Shape: ``x`` ``(B, L, D)``, ``mask`` boolean broadcasting to ``(B, H, L, L)`` (``True`` = may
    attend); the output is ``(B, L, D)`` (or ``(output, weights)``). The weights are copied into
    :class:`attn.MultiHeadAttention` and its output is the answer.
    """
    from attn.attention import MultiHeadAttention

    v_ = Verdict("multi-head attention")
    g = torch.Generator().manual_seed(2)
    tol = dict(rtol=1e-4, atol=1e-5)
    for i, (B, L, D, H, mask) in enumerate([(2, 3, 8, 2, None), (2, 5, 12, 3, None), (1, 4, 8, 1, None),
                                            (2, 5, 8, 2, "causal"), (2, 4, 12, 4, "padding")]):
        case = f"B={B}, L={L}, D={D}, H={H}" + (f", {mask} mask" if mask else "")
        ref = MultiHeadAttention(D, H)
        mine = _built(v_, case, lambda D=D, H=H: cls(D, H), _to_package_mha, ref, seed=10 + i)
        if mine is None:
            continue
        x = torch.randn(B, L, D, generator=g)
        m = None
        if mask == "causal":
            m = masks.causal(L)  # (L, L)
        elif mask == "padding":  # the second sequence has 2 real tokens
            m = (torch.arange(L) < torch.tensor([L, 2])[:, None]).view(B, 1, 1, L)  # (B, 1, 1, S)
        with torch.no_grad():
            expected = ref(x, mask=m)[0]
            _run(v_, case, lambda mine=mine, x=x, m=m: mine(x) if m is None else mine(x, mask=m), expected, **tol)
    return v_


def check_layer_norm(cls: Callable[..., nn.Module]) -> Verdict:
    """Check ``cls(d_model, eps=1e-5)``: LayerNorm written by hand, with parameters ``weight`` and
    ``bias`` of shape ``(D,)``; ``forward(x)`` ``(..., D)`` -> ``(..., D)`` normalises each vector to
    mean 0 and (biased) variance 1 over its ``D`` features, then scales and shifts it. The
    parameters are copied into :class:`torch.nn.LayerNorm`, whose output is the answer.
    """
    v_ = Verdict("LayerNorm")
    g = torch.Generator().manual_seed(5)
    for i, (shape, shift) in enumerate([((2, 3, 8), 0.0), ((4, 16), 0.0), ((1, 5, 6), 100.0)]):
        D = shape[-1]
        case = f"x {shape}" + (f", every feature + {shift:g}" if shift else "")
        ref = nn.LayerNorm(D)
        mine = _built(v_, case, lambda D=D: cls(D), lambda m, r: r.load_state_dict(m.state_dict()), ref,
                      seed=40 + i)
        if mine is None:
            continue
        x = torch.randn(shape, generator=g) + shift
        with torch.no_grad():
            _run(v_, case, lambda mine=mine, x=x: mine(x), ref(x), rtol=1e-4, atol=1e-4)
    return v_


def _dropout_case(verdict: Verdict, make: Callable[[], nn.Module], x: torch.Tensor) -> None:
    """``make()`` builds the reader's module with ``dropout=0.5``: ``train()`` must change the output
    from one call to the next, ``eval()`` must give the same output every time."""
    case = "dropout=0.5: random in train(), off in eval()"
    try:
        mine = make()
        torch.manual_seed(0)
        with torch.no_grad():
            a, b = mine.train()(x), mine(x)
            c, d = mine.eval()(x), mine(x)
    except Exception as e:
        _failed(verdict, case, e)
        return
    if torch.equal(a, b):
        verdict.cases.append((case, False, "train(): two calls gave the same output, is dropout applied?"))
    elif not torch.equal(c, d):
        verdict.cases.append((case, False, "eval(): two calls differ, dropout must be off in eval()"))
    else:
        verdict.cases.append((case, True, ""))


def check_block(cls: Callable[..., nn.Module]) -> Verdict:
    """Check ``cls(d_model, num_heads, d_ff, dropout=0.0)``: a pre-LN decoder block, ``forward(x)``
    ``(B, L, D)`` -> ``(B, L, D)``, causal, ``x + drop(attn(ln1(x)))`` then ``x + drop(ff(ln2(x)))``.

    Its parts: ``ln1``, ``ln2`` (a LayerNorm with ``weight`` and ``bias``, yours or
    ``nn.LayerNorm(D)``), ``attn`` (the multi-head attention of :func:`check_multi_head`, called
    with a causal mask), ``ff`` (``nn.Linear(D, d_ff)``, GELU in GPT-2's tanh form,
    ``nn.Linear(d_ff, D)``). The weights are copied into ``attn.blocks.EncoderLayer(...,
    norm_first=True, activation="gelu_new")``, run with ``is_causal=True``; a last case checks that
    dropout acts in ``train()`` only.
    """
    from attn.blocks import EncoderLayer

    v_ = Verdict("pre-LN decoder block")
    g = torch.Generator().manual_seed(3)
    tol = dict(rtol=1e-4, atol=1e-5)
    for i, (B, L, D, H, d_ff) in enumerate([(2, 4, 8, 2, 32), (1, 6, 12, 3, 16)]):
        case = f"B={B}, L={L}, D={D}, H={H}, d_ff={d_ff}"
        ref = EncoderLayer(D, H, d_ff, dropout=0.0, activation="gelu_new", norm_first=True).eval()
        mine = _built(v_, case, lambda D=D, H=H, d_ff=d_ff: cls(D, H, d_ff), _to_package_block, ref, seed=20 + i)
        if mine is None:
            continue
        x = torch.randn(B, L, D, generator=g)
        with torch.no_grad():
            _run(v_, case, lambda mine=mine, x=x: mine(x), ref(x, is_causal=True), **tol)
    if not v_.todo:
        _dropout_case(v_, lambda: cls(8, 2, 32, dropout=0.5), torch.randn(2, 4, 8, generator=g))
    return v_


def check_gpt(cls: Callable[..., nn.Module]) -> Verdict:
    """Check ``cls(vocab_size, d_model, num_heads, num_layers, max_len, dropout=0.0)``: a tiny GPT,
    ``forward(tokens)`` ``(B, L)`` integer ids -> logits ``(B, L, vocab_size)``.

    Its parts: ``tok_emb`` (``nn.Embedding(V, D)``), ``pos_emb`` (``nn.Embedding(max_len, D)``),
    ``blocks`` (``num_layers`` blocks of :func:`check_block`, ``d_ff = 4 D``), ``ln_f`` (a
    LayerNorm) and ``head`` (``nn.Linear(D, V, bias=False)``, its weight tied to
    ``tok_emb.weight``). The weights are copied into :class:`attn.variants.GPT` (GPT-2's
    architecture, tanh GELU); a last case checks that dropout acts in ``train()`` only.
    """
    from attn.variants import GPT

    v_ = Verdict("tiny GPT")
    g = torch.Generator().manual_seed(4)
    tol = dict(rtol=1e-4, atol=1e-5)

    def copy(mine, theirs):
        theirs.embed.weight.copy_(mine.tok_emb.weight)
        theirs.pos.embedding.weight.copy_(mine.pos_emb.weight)
        if len(mine.blocks) != len(theirs.layers):
            raise ValueError(f"blocks holds {len(mine.blocks)} blocks, expected num_layers = {len(theirs.layers)}")
        for block, layer in zip(mine.blocks, theirs.layers, strict=True):
            _to_package_block(block, layer)
        theirs.norm.load_state_dict(mine.ln_f.state_dict())

    for i, (B, L, V, D, H, N, max_len) in enumerate([(2, 5, 11, 8, 2, 1, 16), (1, 10, 7, 12, 3, 2, 10)]):
        case = f"B={B}, L={L}, V={V}, D={D}, H={H}, num_layers={N}, max_len={max_len}"
        ref = GPT(V, D, H, N, 4 * D, max_len=max_len, dropout=0.0).eval()
        mine = _built(v_, case, lambda V=V, D=D, H=H, N=N, m=max_len: cls(V, D, H, N, m), copy, ref, seed=30 + i)
        if mine is None:
            continue
        if i == 0:
            tied = getattr(getattr(mine, "head", None), "weight", None) is mine.tok_emb.weight
            v_.cases.append(("head tied to tok_emb", tied,
                             "" if tied else "head.weight is not tok_emb.weight: tie them in __init__"))
        tokens = torch.randint(0, V, (B, L), generator=g)
        with torch.no_grad():
            _run(v_, case, lambda mine=mine, t=tokens: mine(t), ref(tokens), **tol)
    if not v_.todo:
        _dropout_case(v_, lambda: cls(11, 8, 2, 1, 16, dropout=0.5), torch.randint(0, 11, (2, 5), generator=g))
    return v_


def check_kv_cache(fn: Callable[..., torch.Tensor], model: nn.Module) -> Verdict:
    """Check ``fn(model, tokens, caches)``: one cached forward pass of the reader's GPT ``model``.

    ``tokens`` ``(B, L)`` are the new ids; ``caches`` is a list with one dict per block, empty at the
    start, that ``fn`` fills with the keys and values it computes and reads back at the next call;
    the result is the logits of the new positions, ``(B, L, V)``. A prompt followed by one token at
    a time must give the logits of one full pass ``model(tokens)`` (``model`` in ``eval()``).
    """
    v_ = Verdict("KV cache")
    model.eval()
    V = model.tok_emb.num_embeddings
    g = torch.Generator().manual_seed(6)
    for B, prompt, steps in [(1, 5, 6), (2, 1, 4)]:
        tokens = torch.randint(0, V, (B, prompt + steps), generator=g)  # (B, L)
        with torch.no_grad():
            full = model(tokens)  # (B, L, V)

            def cached(tokens=tokens, prompt=prompt):
                caches = [{} for _ in model.blocks]
                parts = [fn(model, tokens[:, :prompt], caches)]  # (B, P, V)
                parts += [fn(model, tokens[:, t : t + 1], caches) for t in range(prompt, tokens.shape[1])]
                return torch.cat(parts, dim=1)  # (B, L, V)

            _run(v_, f"B={B}: a prompt of {prompt}, then {steps} steps of one token", cached, full,
                 rtol=1e-4, atol=1e-4)
    return v_


def check_causality(model: nn.Module) -> Verdict:
    """Check that the reader's language model ``model`` (``tokens`` ``(1, L)`` -> logits
    ``(1, L, V)``) is causal: replacing the token at position ``t`` must leave the logits of every
    earlier position exactly as they were, and change those at ``t`` itself."""
    v_ = Verdict("causality")
    model.eval()
    V = model.tok_emb.num_embeddings
    L = 8
    x = torch.randint(0, V, (1, L), generator=torch.Generator().manual_seed(7))
    try:
        with torch.no_grad():
            base = model(x)  # (1, L, V)
            moved = []
            for t in range(L):
                x2 = x.clone()
                x2[0, t] = (x2[0, t] + 1) % V  # another token at position t
                moved.append((model(x2) - base).abs().amax(-1)[0])  # (L,): change at each output
    except Exception as e:
        _failed(v_, "perturb one token at a time", e)
        return v_
    dep = torch.stack(moved, dim=1)  # (L outputs, L replaced positions)
    future = dep.triu(1)
    leaks = [(i, t) for i, t in zip(*torch.nonzero(future, as_tuple=True), strict=True)]
    v_.cases.append(("no output sees a later token", not leaks,
                     "" if not leaks else f"output {int(leaks[0][0])} changed when token {int(leaks[0][1])} did"))
    own = bool((dep.diagonal() > 0).all())
    v_.cases.append(("each output sees its own token", own, "" if own else "an output ignores its own token"))
    return v_
