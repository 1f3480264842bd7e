"""attn.widgets' _nn.js (the models' maths in the front end) equals attn and PyTorch, run under node.

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
from attn.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
NN = ROOT / "src" / "attn" / "widgets" / "_nn.js"
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
