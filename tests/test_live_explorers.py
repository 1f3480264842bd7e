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
import re
import shutil
import subprocess
import tempfile

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import attn
from attn import masks
from attn.book.widgets import OnlineSoftmaxExplorer, WorkedExampleExplorer, state_size_bytes
from attn.book.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "attn" / "book" / "widgets"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the widgets' JavaScript cannot be run")
TOL = dict(atol=1e-6, rtol=0)  # the browser's numbers against Python's (float64 both: in practice ~1e-15)


# --------------------------------------------------------------------------- Python: the worked example
def test_worked_example_starts_as_the_books_example_and_computes_it():
    e = WorkedExampleExplorer()
    ex = attn.book.examples.worked_example()
    assert e.tokens == ex["tokens"] and e.is_causal is False
    for k in ("X", "W_Q", "W_K", "W_V"):
        assert torch.equal(torch.tensor(getattr(e, k)), ex[k].double())
    r = e.result()
    Q, K, V = (ex["X"].double() @ ex[w].double() for w in ("W_Q", "W_K", "W_V"))
    assert_close(r["scores"], Q @ K.T / 2)  # d_k = 4: divided by 2, as the chapter does by hand
    assert_close(r["weights"], torch.softmax(Q @ K.T / 2, -1))
    assert_close(r["out"], F.scaled_dot_product_attention(Q, K, V))
    assert_close(r["weights"].sum(-1), torch.ones(3, dtype=torch.float64))


def test_worked_example_causal_weights_are_the_masked_softmax_and_match_pytorch():
    e = WorkedExampleExplorer(is_causal=True)
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
    (dict(is_causal=1), r"is_causal must be True or False, got 1"),
])
def test_worked_example_refuses_bad_arguments_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WorkedExampleExplorer(**kwargs)


def test_worked_example_update_checks_everything_together_and_keeps_tokens():
    e = WorkedExampleExplorer()
    e.update(X=[[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]], is_causal=True)
    assert e.tokens == ["the", "cat", "sat"] and e.is_causal
    assert_close(e.result()["weights"][2], torch.softmax(e.result()["scores"][2], -1))
    with pytest.raises(ValueError, match="W_Q must have 5 rows"):
        e.update(X=torch.ones(3, 5))
    assert len(e.X[0]) == 4, "a refused update changes nothing"
    with pytest.raises(TypeError, match="unknown names"):
        e.update(Y=1)
    with pytest.raises(ValueError, match="is_causal must be True or False, got 0"):
        e.update(X=torch.ones(2, 4), is_causal=0)
    assert len(e.X) == 3 and e.is_causal, "a refused update changes nothing"
    assert repr(e) == "WorkedExampleExplorer(tokens=['the', 'cat', 'sat'], X=(3, 4), E=4, Ev=4, is_causal=True)"


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
    (dict(block_size=9), r"block_size must lie in \[1, keys=8\], got 9"),
    (dict(block_size=0), r"block_size must lie in \[1, keys=8\], got 0"),
    (dict(step=5), r"step must lie in \[0, blocks=4\] \(the blocks already processed\), got 5"),
    (dict(step=True), r"step must be an integer in \[0, blocks=4\]"),
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


@pytest.mark.parametrize("js", ["worked_example.js", "online_softmax.js", "generation_explorer.js"])
def test_live_modules_are_self_contained_and_never_parse_text_as_html(js):
    src = front_end(js, parts=("_dom.js", "_nn.js"))
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", src, re.M), "one self-contained module"
    assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg\b)", src), "no requests to other hosts"
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser",
                 "getElementById", "document.querySelector", "document.body"):
        assert sink not in src, sink
    assert "export default { render }" in src


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
    cases = [WorkedExampleExplorer(), WorkedExampleExplorer(is_causal=True)]
    for L, D, E, Ev in ((1, 1, 1, 1), (2, 3, 5, 1), (5, 4, 4, 4), (8, 8, 8, 8), (6, 2, 3, 7)):
        for causal in (False, True):
            cases.append(WorkedExampleExplorer(3 * torch.randn(L, D, generator=g), torch.randn(D, E, generator=g),
                                               torch.randn(D, E, generator=g), torch.randn(D, Ev, generator=g), is_causal=causal))
    cases.append(WorkedExampleExplorer(torch.full((3, 4), 30.0), is_causal=False))  # large scores: a one-hot softmax
    return cases


@needs_node
def test_js_worked_example_equals_attn_for_many_inputs():
    cases = worked_cases()
    calls = [{"fn": "workedExample", "args": [{k: getattr(e, k) for k in ("X", "W_Q", "W_K", "W_V", "is_causal")}]} for e in cases]
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


# --------------------------------------------------------------------------- Chromium: as the site serves them
@pytest.fixture
def site(widget_page):
    """open(*widgets, width=...) -> a page showing them through static_runtime.js (conftest's widget_page)."""
    return lambda *widgets, width=1000: widget_page(widgets, width=width)


def shown(page, name: str, root=".attn-worked") -> torch.Tensor:
    """The matrix `name` as the page shows it, read from the data-value attributes (full precision)."""
    cells = page.eval_on_selector_all(f"{root} span[data-name={name}]",
                                      "cs => cs.map(c => [+c.dataset.i, +c.dataset.j, +c.dataset.value])")
    n, m = max(i for i, _, _ in cells) + 1, max(j for _, j, _ in cells) + 1
    out = torch.zeros(n, m, dtype=torch.float64)
    for i, j, v in cells:
        out[i, j] = v
    assert len(cells) == n * m
    return out


def assert_shows(page, e: WorkedExampleExplorer):
    ref = e.result()
    for k in ("Q", "K", "V", "scores", "weights", "out"):
        assert_close(shown(page, k), ref[k], **TOL, msg=lambda m, k=k: f"{k}: {m}")


def test_browser_worked_example_typed_numbers_equal_attn(site):
    page = site(WorkedExampleExplorer())
    assert_shows(page, WorkedExampleExplorer())
    page.fill(".attn-worked input[name=X][data-i='1'][data-j='2']", "-1.5")  # typed: one input event per fill
    X = attn.book.examples.worked_example()["X"]
    X[1, 2] = -1.5
    assert_shows(page, WorkedExampleExplorer(X))
    page.click(".attn-worked summary")  # the projections are editable too
    page.fill(".attn-worked input[name=W_V][data-i='0'][data-j='3']", "2.25")
    W_V = attn.book.examples.worked_example()["W_V"]
    W_V[0, 3] = 2.25
    assert_shows(page, WorkedExampleExplorer(X, W_V=W_V))
    page.focus(".attn-worked input[name=is_causal]")
    page.keyboard.press("Space")  # the causal mask, from the keyboard
    causal = WorkedExampleExplorer(X, W_V=W_V, is_causal=True)
    assert_shows(page, causal)
    assert page.get_attribute(".attn-worked", "data-causal") == "1"
    assert page.locator(".attn-worked span[data-name=scores].attn-masked").count() == 3  # above the diagonal
    model = page.evaluate("(() => { const m = window.attnWidgets.models.get('w0'); return [m.get('X'), m.get('is_causal')]; })()")
    assert model == [X.double().tolist(), True], "the edits are written to the model, for a kernel to read"
    page.click(".attn-worked button[name=reset]")
    assert_shows(page, WorkedExampleExplorer())


def test_browser_worked_example_bad_input_shows_a_message_and_breaks_nothing(site):
    page = site(WorkedExampleExplorer())
    before = shown(page, "weights")
    field = ".attn-worked input[name=X][data-i='0'][data-j='0']"
    message = page.locator(".attn-worked .attn-note")
    for text, says in (("abc", "is not a number"), ("", "is empty"), ("1e9", "is outside -1000..1000"), ("1..2", "is not a number")):
        page.fill(field, text)
        assert message.is_visible() and says in message.inner_text(), text
        assert "X row the, column 0" in message.inner_text()
        assert page.get_attribute(".attn-worked", "data-state") == "invalid"
        assert page.get_attribute(field, "aria-invalid") == "true"
        assert torch.equal(shown(page, "weights"), before), "the last valid numbers stay"
    page.fill(field, "\u22122")  # a typographic minus is a minus
    assert not message.is_visible() and page.get_attribute(".attn-worked", "data-state") == "ok"
    X = attn.book.examples.worked_example()["X"]
    X[0, 0] = -2
    assert_shows(page, WorkedExampleExplorer(X))


def online_shown(page) -> list[dict]:
    return page.eval_on_selector_all(".attn-online tr[data-block]", "rs => rs.map(r => Object.fromEntries("
                                     "['m', 'rescale', 'ell', 'a', 'estimate', 'difference'].map(k => [k, +r.dataset[k]])))")


def assert_online(page, o: OnlineSoftmaxExplorer, step: int):
    ref = o.steps()
    got = online_shown(page)
    assert len(got) == step
    for st_js, st in zip(got, ref, strict=False):
        for k, v in st_js.items():
            assert v == pytest.approx(st[k], abs=1e-6), k
    now = page.locator(".attn-online .attn-step")
    assert int(now.get_attribute("data-step")) == step
    assert float(now.get_attribute("data-full")) == pytest.approx(o.full_output(), abs=1e-6)
    if step:
        assert float(now.get_attribute("data-difference")) == pytest.approx(ref[step - 1]["difference"], abs=1e-6)


def test_browser_online_softmax_steps_with_buttons_and_keys_and_follows_edits(site):
    page = site(OnlineSoftmaxExplorer())
    o = OnlineSoftmaxExplorer()
    assert_online(page, o, 0)
    page.click(".attn-online button[name=next]")
    assert_online(page, o, 1)
    page.focus(".attn-online .attn-step")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert_online(page, o, 3)
    page.keyboard.press("End")
    assert_online(page, o, 4)
    assert abs(float(page.get_attribute(".attn-online .attn-step", "data-difference"))) < 1e-12, "all blocks: full attention"
    assert page.locator(".attn-online button[name=next]").is_disabled()
    page.keyboard.press("ArrowLeft")
    assert_online(page, o, 3)
    page.fill(".attn-online input[name=scores]", "2, -1, 0.5, 7, 3")  # the reader's own query: fewer keys
    page.fill(".attn-online input[name=values]", "1 2 3 4 5")
    page.fill(".attn-online input[name=block_size]", "3")
    mine = OnlineSoftmaxExplorer([2, -1, 0.5, 7, 3], [1, 2, 3, 4, 5], block_size=3)
    assert_online(page, mine, 2)  # step 3 no longer exists: the last of 2 blocks
    page.click(".attn-online button[name=first]")
    assert_online(page, mine, 0)
    saved = page.evaluate("(() => { const m = window.attnWidgets.models.get('w0'); "
                          "return [m.get('scores'), m.get('values'), m.get('block_size'), m.get('step')]; })()")
    assert saved == [[2, -1, 0.5, 7, 3], [1, 2, 3, 4, 5], 3, 0]


def test_browser_online_softmax_bad_input_shows_a_message_and_breaks_nothing(site):
    page = site(OnlineSoftmaxExplorer(step=2))
    message = page.locator(".attn-online .attn-note")
    cases = [("scores", "1, 2, x", "entry 3 (\"x\") is not a number"), ("scores", "", "scores: is empty"),
             ("scores", "1 2 3", "scores has 3 numbers but values has 8"), ("block_size", "0", "block size"),
             ("block_size", "2.5", "whole number from 1 to 8")]
    for name, text, says in cases:
        page.fill(f".attn-online input[name={name}]", text)
        assert message.is_visible() and says in message.inner_text(), (text, message.inner_text())
        assert page.get_attribute(".attn-online", "data-state") == "invalid"
        assert_online(page, OnlineSoftmaxExplorer(step=2), 2)  # the last valid steps stay
        page.fill(".attn-online input[name=scores]", "1, 3, 0, 2, 5, 1, 4, 2")
        page.fill(".attn-online input[name=block_size]", "2")
    assert not message.is_visible()


# One edit's first response: the input event, the recomputation, the new numbers in the DOM and laid
# out (offsetHeight forces the layout); and, apart, until the second animation frame after it (painted;
# frames also wait on the compositor, so that one is noisier on a loaded machine). Called with
# [selector of the input, the values typed one after the other]; returns [sync ms, painted ms].
FIRST_RESPONSE = """async ([sel, values]) => {
  const input = document.querySelector(sel), root = input.closest(".attn-w"), sync = [], frame = [];
  for (const v of values) {
    const t0 = performance.now();
    input.value = v;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    void root.offsetHeight;
    sync.push(performance.now() - t0);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    frame.push(performance.now() - t0);
  }
  return [sync, frame];
}"""


def test_browser_live_explorers_fit_390_px_and_answer_an_edit_within_100_ms_at_4x_cpu_throttle(site):
    from test_mobile import assert_fits_the_phone  # the phone rules the site's explorers meet

    page = site(WorkedExampleExplorer(), OnlineSoftmaxExplorer(step=2), width=390)
    page.click(".attn-worked summary")  # the projections unfolded too
    page.fill(".attn-online input[name=scores]", "1, 3, x")  # and a message shown
    assert_fits_the_phone(page, expect_explorers=2)
    page.fill(".attn-online input[name=scores]", "1, 3, 0, 2, 5, 1, 4, 2")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    edits = [str(x) for x in (1.5, -2, 3.25, 0, 4, 0.5, 2, 1, 2.5, -1, 1)]
    worked = page.evaluate(FIRST_RESPONSE, [".attn-worked input[name=X][data-i='2'][data-j='1']", edits])
    online = page.evaluate(FIRST_RESPONSE, [".attn-online input[name=scores]", [f"1, 3, 0, {x}, 5, 1, 4, 2" for x in edits]])
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"\nfirst response to an edit at 4x CPU throttle, median (max) ms: worked example {median(worked[0]):.1f} "
          f"({max(worked[0]):.1f}), painted {median(worked[1]):.1f}; online softmax {median(online[0]):.1f} "
          f"({max(online[0]):.1f}), painted {median(online[1]):.1f}")
    assert median(worked[0]) < 100 and median(online[0]) < 100, (worked, online)
    X = attn.book.examples.worked_example()["X"]
    X[2, 1] = 1
    assert_shows(page, WorkedExampleExplorer(X))  # the last edit drew the right numbers


def test_browser_matrices_that_do_not_chain_set_from_python_show_a_message_not_an_error(site):
    page = site(WorkedExampleExplorer())
    page.evaluate("window.attnWidgets.models.get('w0').set('W_Q', [[1, 2], [3, 4]])")  # as a kernel could, unchecked
    message = page.locator(".attn-worked .attn-note")
    assert message.is_visible() and "Cannot compute" in message.inner_text() and "matmul" in message.inner_text()
    assert page.get_attribute(".attn-worked", "data-state") == "invalid"
    page.evaluate("window.attnWidgets.models.get('w0').set('W_Q', %s)" % json.dumps(WorkedExampleExplorer().W_Q))
    assert not message.is_visible()
    assert_shows(page, WorkedExampleExplorer())
    page.evaluate("window.attnWidgets.models.get('w0').set('tokens', ['only one'])")  # too few labels: numbers for them
    assert_shows(page, WorkedExampleExplorer())
