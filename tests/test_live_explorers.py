"""The live explorers: WorkedExampleExplorer and OnlineSoftmaxExplorer compute in the page.

Python side: the state starts as the book's example and is checked; the reference numbers come from
attn.scaled_dot_product_attention and attn.efficient.online_softmax_steps. Node: the front ends'
numbers (through _nn.js, the maths every explorer shares) equal the reference for many inputs within
1e-6. Chromium: a page with the static site's own runtime (static_runtime.js) and the two widgets'
saved state, as the site serves it; the test types into the fields, reads the rendered numbers from
data attributes and compares them with the reference, feeds bad input, uses the keyboard, and
measures the first response to an edit with the CPU throttled 4x.
"""

import json
import math
import pathlib
import shutil
import subprocess
import tempfile

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import attn
from attn import masks
from attn.widgets import OnlineSoftmaxExplorer, WorkedExampleExplorer, state_size_bytes
from attn.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "attn" / "widgets"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the widgets' JavaScript cannot be run")
TOL = dict(atol=1e-6, rtol=0)  # the browser's numbers against Python's (float64 both: in practice ~1e-15)


# --------------------------------------------------------------------------- Python: the worked example
def test_worked_example_starts_as_the_books_example_and_computes_it():
    e = WorkedExampleExplorer()
    ex = attn.teaching.worked_example()
    assert e.tokens == ex["tokens"] and e.causal is False
    for k in ("X", "W_Q", "W_K", "W_V"):
        assert torch.equal(torch.tensor(getattr(e, k)), ex[k].double())
    r = e.result()
    Q, K, V = (ex["X"].double() @ ex[w].double() for w in ("W_Q", "W_K", "W_V"))
    assert_close(r["scores"], Q @ K.T / 2)  # d_k = 4: divided by 2, as the chapter does by hand
    assert_close(r["weights"], torch.softmax(Q @ K.T / 2, -1))
    assert_close(r["out"], F.scaled_dot_product_attention(Q, K, V))
    assert_close(r["weights"].sum(-1), torch.ones(3, dtype=torch.float64))


def test_worked_example_causal_weights_are_the_masked_softmax_and_match_pytorch():
    e = WorkedExampleExplorer(causal=True)
    r = e.result()
    assert (r["weights"].triu(1) == 0).all()
    assert_close(r["weights"], attn.masks.masked_softmax(r["scores"], masks.causal(3)))
    assert_close(r["out"], F.scaled_dot_product_attention(r["Q"], r["K"], r["V"], is_causal=True))
    assert r["weights"][0].tolist() == [1.0, 0.0, 0.0]  # the first token sees only itself
    assert not torch.equal(r["out"], WorkedExampleExplorer().result()["out"])


def test_worked_example_takes_other_shapes_and_rounds_to_4_decimals():
    g = torch.Generator().manual_seed(1)
    e = WorkedExampleExplorer(torch.randn(5, 3, generator=g), torch.randn(3, 2, generator=g), torch.randn(3, 2, generator=g),
                              torch.randn(3, 6, generator=g))
    assert e.tokens == ["0", "1", "2", "3", "4"]
    r = e.result()
    assert r["scores"].shape == (5, 5) and r["out"].shape == (5, 6)
    X = torch.tensor(e.X, dtype=torch.float64)
    assert (X * 10_000 - (X * 10_000).round()).abs().max() < 1e-6
    assert_close(r["out"], F.scaled_dot_product_attention(r["Q"], r["K"], r["V"]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=torch.ones(3, 5)), r"W_Q must have 5 rows .* got shape \(4, 4\)"),
    (dict(W_K=torch.ones(4, 3)), r"W_Q and W_K need the same number of columns E"),
    (dict(X=torch.ones(9, 4), W_Q=torch.ones(4, 4)), r"X has shape \(9, 4\): .* at most 8"),
    (dict(X=torch.full((3, 4), float("nan"))), r"X has entries that are not finite"),
    (dict(W_V=torch.full((4, 4), 1e4)), r"W_V has entries .* \[-1000, 1000\]"),
    (dict(tokens=["a", "b"]), r"tokens has 2 entries but X has 3 rows"),
    (dict(X=torch.ones(4)), r"X must be a non-empty matrix, got shape \(4\)"),
])
def test_worked_example_refuses_bad_arguments_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WorkedExampleExplorer(**kwargs)


def test_worked_example_update_checks_everything_together_and_keeps_tokens():
    e = WorkedExampleExplorer()
    e.update(X=[[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]], causal=True)
    assert e.tokens == ["the", "cat", "sat"] and e.causal
    assert_close(e.result()["weights"][2], torch.softmax(e.result()["scores"][2], -1))
    with pytest.raises(ValueError, match="W_Q must have 5 rows"):
        e.update(X=torch.ones(3, 5))
    assert len(e.X[0]) == 4, "a refused update changes nothing"
    with pytest.raises(TypeError, match="unknown names"):
        e.update(Y=1)
    assert repr(e) == "WorkedExampleExplorer(tokens=['the', 'cat', 'sat'], X=(3, 4), E=4, Ev=4, causal=True)"


# --------------------------------------------------------------------------- Python: the online softmax
def test_online_softmax_starts_with_the_figures_example_and_ends_at_full_attention():
    o = OnlineSoftmaxExplorer()
    assert (len(o.scores), o.block_size, o.step, o.n_blocks) == (8, 2, 0, 4)
    s, v = torch.tensor(o.scores, dtype=torch.float64), torch.tensor(o.values, dtype=torch.float64)
    assert o.full_output() == pytest.approx(float(torch.softmax(s, 0) @ v), abs=1e-12)
    steps = o.steps()
    assert len(steps) == 4 and [st["start"] for st in steps] == [0, 2, 4, 6]
    assert steps[-1]["difference"] == pytest.approx(0, abs=1e-12)
    assert steps[0]["difference"] != pytest.approx(0, abs=1e-3), "after one block the estimate is not the answer yet"
    rose = [st["m"] > st["m_old"] for st in steps]
    assert rose == [True, False, True, False]  # scores 1 3 | 0 2 | 5 1 | 4 2: the max rises in blocks 1 and 3
    assert steps[2]["rescale"] == pytest.approx(math.exp(3 - 5))
    for k, st in enumerate(steps):  # each estimate is the exact softmax over the keys seen so far
        seen = slice(0, st["start"] + 2)
        assert st["estimate"] == pytest.approx(float(torch.softmax(s[seen], 0) @ v[seen]), abs=1e-12), k


@pytest.mark.parametrize("kwargs, match", [
    (dict(scores=[1, 2], values=[1]), r"same non-zero length, got shapes \(2\) and \(1\)"),
    (dict(scores=[], values=[]), r"same non-zero length"),
    (dict(scores=list(range(40)), values=list(range(40))), r"40 keys: .* at most 32"),
    (dict(scores=[1, float("inf")], values=[1, 2]), r"scores has entries that are not finite"),
    (dict(block_size=9), r"block_size=9 is larger than the number of keys \(8\)"),
    (dict(block_size=0), r"block_size must be a positive integer"),
    (dict(step=5), r"step must be a whole number from 0 to 4"),
])
def test_online_softmax_refuses_bad_arguments_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OnlineSoftmaxExplorer(**kwargs)


def test_online_softmax_update_keeps_the_step_where_it_fits():
    o = OnlineSoftmaxExplorer(step=4)
    o.update(block_size=4)
    assert (o.n_blocks, o.step) == (2, 2)
    o.update(scores=[0.5, 1.5, -1], values=[1, 2, 3])
    assert (o.block_size, o.step) == (3, 1)
    with pytest.raises(ValueError, match="same non-zero length"):
        o.update(values=[1])
    assert o.values == [1.0, 2.0, 3.0]
    assert repr(o) == "OnlineSoftmaxExplorer(keys=3, block_size=3, step=1 of 1)"


@pytest.mark.parametrize("make", [WorkedExampleExplorer, OnlineSoftmaxExplorer])
def test_live_explorers_state_is_small_json_and_carries_the_shared_maths(make):
    w = make()
    state = w.get_state()
    json.dumps(state)
    assert state_size_bytes(w) < 60_000
    js = {WorkedExampleExplorer: "worked_example.js", OnlineSoftmaxExplorer: "online_softmax.js"}[make]
    assert state["_esm"] == front_end(js, parts=("_dom.js", "_nn.js"))
    assert (WIDGETS / "_dom.js").read_text() in state["_esm"] and (WIDGETS / "_nn.js").read_text() in state["_esm"]


# --------------------------------------------------------------------------- node: the front end's numbers
def call_js(module: str, calls: list[dict]) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / module
        path.write_text(front_end(module, parts=("_dom.js", "_nn.js")))
        out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(path)],
                             input=json.dumps(calls), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def worked_cases() -> list[WorkedExampleExplorer]:
    g = torch.Generator().manual_seed(7)
    cases = [WorkedExampleExplorer(), WorkedExampleExplorer(causal=True)]
    for L, D, E, Ev in ((1, 1, 1, 1), (2, 3, 5, 1), (5, 4, 4, 4), (8, 8, 8, 8), (6, 2, 3, 7)):
        for causal in (False, True):
            cases.append(WorkedExampleExplorer(3 * torch.randn(L, D, generator=g), torch.randn(D, E, generator=g),
                                               torch.randn(D, E, generator=g), torch.randn(D, Ev, generator=g), causal=causal))
    cases.append(WorkedExampleExplorer(torch.full((3, 4), 30.0), causal=False))  # large scores: a one-hot softmax
    return cases


@needs_node
def test_js_worked_example_equals_attn_for_many_inputs():
    cases = worked_cases()
    calls = [{"fn": "workedExample", "args": [{k: getattr(e, k) for k in ("X", "W_Q", "W_K", "W_V", "causal")}]} for e in cases]
    for e, js in zip(cases, call_js("worked_example.js", calls), strict=True):
        ref = e.result()
        for k in ("Q", "K", "V", "scores", "weights", "out"):
            assert_close(torch.tensor(js[k], dtype=torch.float64), ref[k], **TOL, msg=lambda m, k=k, e=e: f"{k} of {e!r}: {m}")


def online_cases() -> list[OnlineSoftmaxExplorer]:
    g = torch.Generator().manual_seed(3)
    cases = [OnlineSoftmaxExplorer(), OnlineSoftmaxExplorer(block_size=3), OnlineSoftmaxExplorer(block_size=8),
             OnlineSoftmaxExplorer([0.0], [5.0], block_size=1), OnlineSoftmaxExplorer([900, -900, 1], [1, 2, 3], block_size=1)]
    for S, b in ((5, 2), (13, 4), (32, 5), (7, 1)):
        cases.append(OnlineSoftmaxExplorer(4 * torch.randn(S, generator=g), torch.randn(S, generator=g), block_size=b))
    return cases


@needs_node
def test_js_online_softmax_steps_equal_attn_for_many_inputs():
    cases = online_cases()
    calls = [{"fn": "steppedPass", "args": [o.scores, o.values, o.block_size]} for o in cases]
    calls += [{"fn": "fullOutput", "args": [o.scores, o.values]} for o in cases]
    got = call_js("online_softmax.js", calls)
    for o, js, full in zip(cases, got, got[len(cases):], strict=False):
        assert full == pytest.approx(o.full_output(), abs=1e-6)
        ref = o.steps()
        assert len(js) == len(ref) == o.n_blocks
        assert js[0]["m_old"] == {"$float": "-Infinity"} and ref[0]["m_old"] == float("-inf")  # nothing seen yet
        for st_js, st in zip(js, ref, strict=True):
            for k, v in st.items():
                if k == "m_old" and v == float("-inf"):
                    continue
                assert st_js[k] == pytest.approx(v, abs=1e-6), (o, k)
