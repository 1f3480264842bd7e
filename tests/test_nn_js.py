"""attn.book.widgets' _nn.js (the models' maths in the front end) equals attn and PyTorch, run under node.

The JavaScript is the file the explorers load (``front_end(..., parts=(..., "_nn.js"))``); here it runs
as a module of its own through tests/js/run_esm.mjs. References are computed by attn at test time, so
changing either side without the other fails a test.
"""

import json
import math
import pathlib
import shutil
import subprocess

import pytest
import torch
from torch.testing import assert_close

from attn import functional, masks
from attn.efficient import online_softmax_steps
from attn.book.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
NN = ROOT / "src" / "attn" / "book" / "widgets" / "_nn.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the front end's maths cannot be run")


def _encode(x):
    """Non-finite floats as run_esm.mjs's {"$float": "-Infinity"}; tensors as nested lists."""
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return {"$float": {math.inf: "Infinity", -math.inf: "-Infinity"}.get(x, "NaN")}
    if isinstance(x, dict):
        return {k: _encode(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_encode(v) for v in x]
    return x


def _decode(d):
    return float(d["$float"]) if set(d) == {"$float"} else d


def call_nn(calls: list[dict], module: pathlib.Path = NN) -> list:
    """Run ``calls`` ([{fn, args, catches?}]) under node against ``module`` (default: _nn.js itself)."""
    out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(module)],
                         input=json.dumps(_encode(calls)), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout, object_hook=_decode)


def t64(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


# --------------------------------------------------------------------------- primitives
def test_matmul_transpose_and_softmax_rows_equal_torch():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(3, 5, generator=g, dtype=torch.float64)
    S = 4 * torch.randn(3, 6, generator=g, dtype=torch.float64)
    S[0, [1, 4]] = -math.inf
    S[2] = -math.inf  # a row with no key: zeros, not NaN
    mm, tr, sm = call_nn([{"fn": "matmul", "args": [A, B]}, {"fn": "transpose", "args": [A]},
                          {"fn": "softmaxRows", "args": [S]}])
    assert_close(t64(mm), A @ B, atol=1e-12, rtol=0)
    assert torch.equal(t64(tr), A.T)
    assert_close(t64(sm), masks.masked_softmax(S), atol=1e-15, rtol=0)
    assert t64(sm)[2].eq(0).all() and t64(sm)[0, [1, 4]].eq(0).all()


@pytest.mark.parametrize("case", ["none", "causal", "padding", "fully_masked_row", "scale"])
def test_attention_equals_attn_scaled_dot_product_attention(case):
    g = torch.Generator().manual_seed(1)
    L, S, E, Ev = 5, 7, 4, 3
    q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float64) for n, d in ((L, E), (S, E), (S, Ev)))
    mask = {"none": None, "causal": masks.causal(L, S), "padding": masks.padding([4], S, L=L)[0],
            "fully_masked_row": masks.causal(L, S, offset=-1), "scale": None}[case]
    scale = 0.3 if case == "scale" else None
    out, w = functional.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale, return_weights=True)
    opts = {"mask": None if mask is None else mask.tolist(), "scale": scale}
    (js,) = call_nn([{"fn": "attention", "args": [q, k, v, opts]}])
    assert_close(t64(js["weights"]), w, atol=1e-14, rtol=0)
    assert_close(t64(js["out"]), out, atol=1e-14, rtol=0)
    assert_close(t64(js["raw"]), q @ k.T, atol=1e-14, rtol=0)
    expected = (q @ k.T) * (scale or 1 / math.sqrt(E))
    if mask is not None:
        expected = expected.masked_fill(~mask, -math.inf)
    assert_close(t64(js["scores"]), expected, atol=1e-14, rtol=0)
    if case == "fully_masked_row":
        assert t64(js["weights"])[0].eq(0).all() and t64(js["out"])[0].eq(0).all()


@pytest.mark.parametrize("block_size", [1, 2, 3, 8])
def test_online_softmax_steps_equal_attn_efficient(block_size):
    g = torch.Generator().manual_seed(2)
    scores = (3 * torch.randn(7, generator=g, dtype=torch.float64)).tolist()
    values = torch.randn(7, generator=g, dtype=torch.float64).tolist()
    scores[0] = -math.inf  # a masked key first: the first block's maximum may stay -inf
    (js,) = call_nn([{"fn": "onlineSoftmaxSteps", "args": [scores, values, block_size]}])
    ref = list(online_softmax_steps(scores, values, block_size))
    assert len(js) == len(ref) == math.ceil(7 / block_size)
    for a, b in zip(js, ref, strict=True):
        assert set(a) == set(b)
        for key in b:
            assert a[key] == pytest.approx(b[key], abs=1e-13, rel=1e-13) or (a[key] == b[key]), (key, a, b)
    assert js[-1]["a"] / js[-1]["ell"] == pytest.approx(float(torch.softmax(t64(scores), 0) @ t64(values)), abs=1e-14)


def test_bad_input_to_the_primitives_throws_an_error_naming_the_argument():
    calls = [{"fn": "matmul", "args": [[[1, 2]], [[1, 2]]]}, {"fn": "softmaxRows", "args": [[[1], [1, 2]]]},
             {"fn": "attention", "args": [[[1, 2]], [[1, 2]], [[1], [2]]]},
             {"fn": "attention", "args": [[[1, 2]], [[1, 2]], [[1]], {"mask": [[True, False]]}]},
             {"fn": "onlineSoftmaxSteps", "args": [[1, 2], [1], 1]}, {"fn": "onlineSoftmaxSteps", "args": [[1], [1], 0]}]
    got = [r["error"] for r in call_nn([dict(c, catches=True) for c in calls])]
    assert all(e and e.startswith("Error:") for e in got), got
    for needle, e in zip(["B needs 2 rows", "S must be", "V needs 1 rows", "mask must be", "same, non-zero length",
                          "blockSize must be a positive integer"], got, strict=True):
        assert needle in e, e


def test_front_end_puts_the_parts_asked_for_in_front_and_refuses_unknown_ones():
    src = front_end("attention_explorer.js", parts=("_dom.js", "_nn.js"))
    assert src.index("function h(") < src.index("export function matmul(") < src.index("export function headColor(")
    assert "export function matmul(" not in front_end("attention_explorer.js")  # default: _dom.js only
    with pytest.raises(ValueError, match="parts names unknown"):
        front_end("attention_explorer.js", parts=("_nope.js",))


# --------------------------------------------------------------------------- the models
from attn import positional as pos  # noqa: E402
from attn.attention import record_attention  # noqa: E402
from attn.models import TokenModel  # noqa: E402
from attn.book.widgets.model_state import checkpoint_state, model_state  # noqa: E402

V, D, H, MAX_LEN = 11, 16, 4, 12
POSITIONAL = ["none", "sinusoidal", "learned", "rope", "alibi"]


def seeded_model(positional: str, *, is_causal: bool, norm_first: bool, seed: int = 0) -> TokenModel:
    """A small random TokenModel whose parameters are float16 numbers (what model_state stores), in float32."""
    torch.manual_seed(seed)
    spec = {"none": None, "sinusoidal": "sinusoidal", "learned": pos.LearnedPositionalEncoding(D, MAX_LEN),
            "rope": pos.RotaryPositionalEncoding(D // H), "alibi": pos.ALiBi(H)}[positional]
    model = TokenModel(V, D, H, num_layers=2, d_ff=24, max_len=MAX_LEN, is_causal=is_causal, norm_first=norm_first,
                       positional=spec).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))  # LayerNorms and biases away from 1 and 0
            p.copy_(p.half().float())
    return model


def torch_reference(model, tokens: list[int], key_mask: list[bool] | None = None):
    """Logits (L, V) and attention weights (layers, H, L, S) of ``model`` on one sequence."""
    x = torch.tensor([tokens])
    km = None if key_mask is None else torch.tensor([key_mask])
    with torch.no_grad(), record_attention(model) as rec:
        logits = model(x, key_mask=km)
    return logits[0], torch.stack([w[0] for w in rec.values()])


def js_weights(result) -> torch.Tensor:
    return t64(result["attention"])  # (layers, H, L, S)


CASES = [(p, c, nf) for p in POSITIONAL for c in (True, False) for nf in (True, False)]
TOKENS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
PADDED = [True] * 7 + [False] * 3  # the last three keys are padding
HOLES = [False, True, True, False, True, True, True, True, True, False]  # key 0 hidden: a causal query 0 sees nothing
KEY_MASKS = (None, PADDED, HOLES)


@pytest.fixture(scope="module")
def forward_runs() -> dict:
    """The JS forward pass of every case and key mask, in one node process (it starts slowly on a busy machine)."""
    calls = []
    for positional, is_causal, norm_first in CASES:
        spec = model_state(seeded_model(positional, is_causal=is_causal, norm_first=norm_first))
        calls += [{"fn": "runModel", "args": [spec, TOKENS, {} if km is None else {"keyMask": km}]} for km in KEY_MASKS]
    got = call_nn(calls)
    return {case: got[3 * n : 3 * n + 3] for n, case in enumerate(CASES)}


@pytest.mark.parametrize(("positional", "is_causal", "norm_first"), CASES)
def test_js_forward_equals_attn_for_every_position_encoding_and_mask(forward_runs, positional, is_causal, norm_first):
    model = seeded_model(positional, is_causal=is_causal, norm_first=norm_first)
    m64 = seeded_model(positional, is_causal=is_causal, norm_first=norm_first).double()
    got = forward_runs[positional, is_causal, norm_first]
    for js, key_mask in zip(got, KEY_MASKS, strict=True):
        logits, weights = torch_reference(model, TOKENS, key_mask)
        assert_close(t64(js["logits"]), logits.double(), atol=1e-5, rtol=0)  # float32 PyTorch
        assert_close(js_weights(js), weights.double(), atol=1e-5, rtol=0)
        logits64, weights64 = torch_reference(m64, TOKENS, key_mask)  # float64 PyTorch: the same maths
        assert_close(t64(js["logits"]), logits64, atol=1e-10, rtol=0)
        assert_close(js_weights(js), weights64, atol=1e-12, rtol=0)
    if is_causal:
        assert js_weights(got[2])[:, :, 0].eq(0).all()  # a query that sees no key: zeros, not NaN


def test_js_runs_attention_only_models_and_ablates_heads_as_attn_head_mask_does():
    """d_ff = 0 (no feed-forward, no second norm: the induction-heads chapter's models), pre- and post-LN,
    and headMask against attn's MultiHeadAttention.head_mask: logits and each head's own weights."""
    torch.manual_seed(1)
    cases, calls = [], []
    for norm_first in (True, False):
        model = TokenModel(V, D, H, num_layers=2, d_ff=0, max_len=MAX_LEN, is_causal=True, norm_first=norm_first,
                           positional=pos.LearnedPositionalEncoding(D, MAX_LEN)).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn_like(p))
                p.copy_(p.half().float())
        spec = model_state(model)
        assert spec["config"]["d_ff"] == 0 and spec["config"]["activation"] is None
        assert not any(".ff." in k or "norm2" in k for k in spec["tensors"])
        for ablated in ((), ((0, 1),), ((0, 2), (1, 3))):
            head_mask = [[0.0 if (li, h) in ablated else 1.0 for h in range(H)] for li in range(2)]
            cases.append((model, head_mask))
            calls.append({"fn": "runModel", "args": [spec, TOKENS, {"headMask": head_mask}]})
    got = call_nn(calls)
    ref = torch_reference(cases[0][0].double(), TOKENS)[0]
    for (model, head_mask), js in zip(cases, got, strict=True):
        m64 = model.double()
        for layer, factors in zip(m64.layers, head_mask, strict=True):
            layer.self_attn.head_mask = t64(factors)
        logits, weights = torch_reference(m64, TOKENS)
        for layer in m64.layers:
            layer.self_attn.head_mask = None
        model.float()
        assert_close(t64(js["logits"]), logits, atol=1e-10, rtol=0)
        assert_close(js_weights(js), weights, atol=1e-12, rtol=0)
    assert (t64(got[1]["logits"]) - ref).abs().max() > 1e-3  # the ablation changed the output
    bad = call_nn([{"fn": "runModel", "args": [model_state(cases[0][0]), TOKENS, {"headMask": [[1, 1]]}],
                    "catches": True}])[0]["error"]
    assert "headMask must be number[2][4]" in bad


def test_js_cached_decoding_equals_the_full_pass_and_attn_generate():
    tokens, chunks = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8], [4, 1, 1, 3, 1]
    models = [seeded_model(p, is_causal=True, norm_first=True, seed=1) for p in POSITIONAL]
    calls = []
    for model in models:
        spec = model_state(model)
        calls += [{"fn": "runCached", "args": [spec, tokens, chunks]}, {"fn": "runGenerate", "args": [spec, tokens[:3], 9]},
                  {"fn": "runGenerate", "args": [spec, tokens[:3], 9, {"useCache": False}]}]
    got = call_nn(calls)
    for n, (positional, model) in enumerate(zip(POSITIONAL, models, strict=True)):
        run, gen, gen_nocache = got[3 * n : 3 * n + 3]
        full_logits, full_w = t64(run["full"]["logits"]), js_weights(run["full"])
        at = 0
        for k, step in zip(chunks, run["cached"], strict=True):
            assert_close(t64(step["logits"]), full_logits[at:at + k], atol=1e-12, rtol=0, msg=positional)
            assert_close(js_weights(step), full_w[:, :, at:at + k, :at + k], atol=1e-14, rtol=0, msg=positional)
            at += k
        logits, _ = torch_reference(model, tokens)
        assert_close(full_logits, logits.double(), atol=1e-5, rtol=0)
        expected = model.generate(torch.tensor([tokens[:3]]), 9)[0].tolist()
        assert gen["tokens"] == expected == gen_nocache["tokens"], positional
        assert gen["cacheLengths"] == list(range(3, 12))


def test_js_runs_the_trained_gpt_checkpoint_as_pytorch_does():
    """The book's trained GPT at its full context (64 characters): equal to float64 PyTorch to 1e-10.

    Against float32 PyTorch the attention weights agree within 1e-5, the logits (up to about 11 in
    size) within 2e-5: at 64 tokens float32's own rounding reached 1.3e-5 in one logit (measured),
    which is PyTorch's error, not the front end's, as the float64 comparison shows.
    """
    from attn.book import pretraining

    spec = checkpoint_state("gpt")
    model, _ = pretraining.load("gpt")
    vocab = pretraining.text_corpus()[0]
    tokens = vocab.encode("the attention of the model is what it sees, and what it does not see is")[:64]
    assert len(tokens) == 64 == spec["config"]["max_len"]
    got = call_nn([{"fn": "runModel", "args": [spec, tokens, {}]},
                   {"fn": "runGenerate", "args": [spec, tokens[:30], 34]}])
    logits, weights = torch_reference(model, tokens)
    assert_close(t64(got[0]["logits"]), logits.double(), atol=2e-5, rtol=0)
    assert_close(js_weights(got[0]), weights.double(), atol=1e-5, rtol=0)
    assert got[1]["tokens"] == model.generate(torch.tensor([tokens[:30]]), 34)[0].tolist()
    logits64, weights64 = torch_reference(model.double(), tokens)
    assert_close(t64(got[0]["logits"]), logits64, atol=1e-10, rtol=0)
    assert_close(js_weights(got[0]), weights64, atol=1e-12, rtol=0)
    assert spec["vocab"] == vocab.itos


def test_js_cache_cut_back_after_an_edit_then_run_on_equals_the_full_pass_of_the_edited_tokens():
    """truncateCache: in a causal model the positions before an edit stay; the rest runs with the cache."""
    tokens, edited = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8], [2, 7, 1, 9, 9, 3]  # the same first 3, then different
    calls = []
    for positional in POSITIONAL:
        spec = model_state(seeded_model(positional, is_causal=True, norm_first=True, seed=2))
        calls += [{"fn": "runEdited", "args": [spec, tokens, 3, edited[3:]]}, {"fn": "runModel", "args": [spec, edited]}]
    calls.append({"fn": "runEdited", "args": [spec, tokens, 11, [3]], "catches": True})
    got = call_nn(calls)
    for n, positional in enumerate(POSITIONAL):
        part, full = got[2 * n : 2 * n + 2]
        assert_close(t64(part["logits"]), t64(full["logits"])[3:], atol=1e-12, rtol=0, msg=positional)
        assert_close(js_weights(part), js_weights(full)[:, :, 3:], atol=1e-14, rtol=0, msg=positional)
    assert "length must be an integer from 0 to the cached 10 positions, got 11" in got[-1]["error"]


def test_bad_input_to_the_model_throws_an_error_naming_the_argument():
    spec = checkpoint_state("gpt")
    ok = list(range(3, 13))
    calls = [{"fn": "runModel", "args": [spec, [3, 99, 4]]},
             {"fn": "runModel", "args": [spec, [3] * 65]},
             {"fn": "runModel", "args": [spec, [3, 4.5]]},
             {"fn": "runModel", "args": [spec, []]},
             {"fn": "runModel", "args": [spec, ok, {"keyMask": [True] * 3}]},
             {"fn": "runGenerate", "args": [spec, ok, 60]},
             {"fn": "runModel", "args": [dict(spec, format="other"), ok]}]
    got = [r["error"] for r in call_nn([dict(c, catches=True) for c in calls])]
    needles = ["tokens[1] = 99 is not a token id", "tokens has 65 tokens", "tokens[1] = 4.5", "tokens must be a non-empty",
               "keyMask must be boolean[10]", "prompt length 10 + maxNewTokens 60 exceeds", "spec must be a model"]
    for needle, e in zip(needles, got, strict=True):
        assert e is not None and needle in e, (needle, e)


def test_the_gpt_weights_and_the_maths_fit_the_page_budget():
    """Issue 22's budget: weights and code of a live explorer at most 1 MB transferred (gzip)."""
    import gzip

    from scripts.export_weights import sizes

    raw16, gz16 = sizes(checkpoint_state("gpt"))
    raw32, _ = sizes(checkpoint_state("gpt", dtype="float32"))
    params = 107_264  # attn/checkpoints/gpt.json
    assert 2 * params * 4 / 3 < raw16 < 1.05 * 2 * params * 4 / 3  # base64 float16: 2 bytes a weight, 4/3 for base64
    assert raw16 < 0.52 * raw32
    code = gzip.compress(front_end("attention_explorer.js", parts=("_dom.js", "_nn.js")).encode(), 9)
    assert gz16 + len(code) < 1_000_000, (gz16, len(code))
