"""attn.book.widgets, front-end side: the JavaScript draws the same masks, scores and numbers as Python.

The widgets' ES modules export their pure functions; tests/js/run_esm.mjs calls them under node and the
results are compared with attn.masks here. Then the modules are checked for what the static book needs
(self-contained, no HTML parsing of data), and, where Chromium and Playwright are installed, rendered in a
real browser against a stand-in for the widget model.
"""

import json
import pathlib
import random
import re
import shutil
import subprocess
import tempfile

import pytest
import torch
from torch.testing import assert_close

from attn import masks
from attn.book.widgets import KINDS, AttentionExplorer, MaskExplorer, PositionalEncodingExplorer, seeded_scores
from attn.book.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "attn" / "book" / "widgets"
JS_FILES = ["mask_explorer.js", "attention_explorer.js", "positional_explorer.js"]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the widgets' JavaScript cannot be run")


def call_js(module: str, calls: list[dict]) -> list:
    """Run ``calls`` ([{fn, args}]) under node against the module the widget loads (``front_end(module)``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / module
        path.write_text(front_end(module))
        out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(path)],
                             input=json.dumps(calls), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def random_states(n: int, seed: int = 0) -> list[dict]:
    """Widget states covering every kind, square and not, small and large windows, many seeds."""
    rng = random.Random(seed)
    states = []
    for case in range(n):
        kind = KINDS[case % len(KINDS)]
        L = rng.choice([1, 2, 3, 5, 8, 12, 16, 32])
        S = rng.choice([None, None, 1, 4, 7, 16, 32])
        S_ = L if S is None or kind == "prefix_lm" else S
        states.append(dict(
            kind=kind, L=L, S=S, window=rng.choice([1, 2, 3, 5, 40]), dilation=rng.choice([1, 2, 3]),
            lengths=[rng.randint(0, S_) for _ in range(rng.randint(1, 3))],
            src_lengths=[rng.randint(0, S_) for _ in range(rng.randint(1, 3))], batch=rng.randint(0, 2),
            global_tokens=sorted(rng.sample(range(min(L, S_)), rng.randint(0, min(3, L, S_)))),
            num_random=rng.choice([0, 1, 2, 5, 40]), seed=rng.choice([0, 1, 7, 42, 123456, 2**31 - 1, 2**32 - 1]),
            prefix=rng.randint(0, L), scores=[], kinds=list(KINDS)))
    return states


def oracle(state: dict) -> torch.Tensor:
    """The mask for a (valid) state, from attn.masks directly."""
    kind, L = state["kind"], state["L"]
    S = L if state["S"] is None or kind == "prefix_lm" else state["S"]
    lens = state["src_lengths" if kind == "cross_padding" else "lengths"]
    b = min(state["batch"], len(lens) - 1)
    w, g = state["window"], state["global_tokens"]
    return {
        "none": lambda: torch.ones(L, S, dtype=torch.bool),
        "causal": lambda: masks.causal(L, S),
        "padding": lambda: masks.padding(lens, S, L=L)[b],
        "causal+padding": lambda: masks.combine(masks.causal(L, S), masks.padding(lens, S, L=L))[b],
        "sliding_window": lambda: masks.sliding_window(L, S, window=w),
        "dilated": lambda: masks.dilated(L, S, window=w, dilation=state["dilation"]),
        "local_global": lambda: masks.local_global(L, S, window=w, global_tokens=g),
        "bigbird": lambda: masks.bigbird(L, S, window=w, global_tokens=g, num_random=state["num_random"], seed=state["seed"]),
        "prefix_lm": lambda: masks.prefix_lm(L, state["prefix"]),
        "cross_padding": lambda: masks.cross_padding(lens, L, S)[b],
    }[kind]()


def explorer_state(w: MaskExplorer) -> dict:
    return {k: getattr(w, k) for k in ("kind", "L", "S", "window", "dilation", "lengths", "batch", "global_tokens",
                                       "num_random", "seed", "prefix", "src_lengths", "scores", "kinds")}


# --------------------------------------------------------------------------- node: pure functions
@needs_node
@pytest.mark.parametrize("js", JS_FILES)
def test_each_module_has_a_render_default_export_and_named_pure_functions(js):
    (exports,) = call_js(js, [{"fn": "__exports__"}])
    assert exports["default"] == {"render": "function"}
    expected = {"mask_explorer.js": {"buildMask", "normalize", "mulberry32", "seededScores", "maskedSoftmax", "scoresFor"},
                "attention_explorer.js": {"headColor", "shortToken", "weightScale"},
                "positional_explorer.js": {"dotProfile", "pairPoint", "divergingColor"}}[js]
    assert expected <= set(exports["named"])


@needs_node
def test_js_masks_equal_attn_masks_for_every_kind_and_many_settings():
    states = random_states(400)
    got = call_js("mask_explorer.js", [{"fn": "buildMask", "args": [s]} for s in states])
    assert {s["kind"] for s in states} == set(KINDS)
    for state, js in zip(states, got, strict=True):
        expected = oracle(state)
        assert torch.equal(torch.tensor(js, dtype=torch.bool).reshape(expected.shape), expected), state
        assert len(js) == expected.shape[0] and all(len(r) == expected.shape[1] for r in js)


@needs_node
def test_js_bigbird_draws_the_same_random_keys_for_many_seeds():
    states = [dict(kind="bigbird", L=L, S=S, window=1, global_tokens=[], num_random=r, seed=seed)
              for seed in (0, 1, 2, 3, 99, 2**31 + 5) for L, S in ((16, 16), (7, 13)) for r in (1, 3)]
    got = call_js("mask_explorer.js", [{"fn": "buildMask", "args": [s]} for s in states])
    for s, js in zip(states, got, strict=True):
        ref = masks.bigbird(s["L"], s["S"], window=1, global_tokens=(), num_random=s["num_random"], seed=s["seed"])
        assert torch.equal(torch.tensor(js), ref), s
    assert got[0] != got[4]  # different seeds, different patterns


@needs_node
def test_js_normalize_limits_values_exactly_as_python_does():
    ws = []
    for kind in KINDS:
        w = MaskExplorer(kind, 10, global_tokens=(0, 8), lengths=[10, 7, 2], src_lengths=[9, 3], batch=2, prefix=9,
                         num_random=9)
        w.L, w.S, w.batch = 5, 4, 7  # out of range for several dependents: both sides must limit them alike
        ws.append(w)
        w2 = MaskExplorer(kind, 6)
        w2.S, w2.window, w2.seed = None, 9, 2**32 - 1
        ws.append(w2)
    calls = [{"fn": fn, "args": [explorer_state(w)]} for w in ws for fn in ("normalize", "buildMask")]
    got = call_js("mask_explorer.js", calls)
    for n, w in enumerate(ws):
        js_params, js_mask = got[2 * n], got[2 * n + 1]
        assert js_params == w._params(), w
        assert torch.equal(torch.tensor(js_mask), w.mask()), w


@needs_node
def test_js_mulberry32_and_seeded_scores_equal_python_bit_for_bit():
    seeds = [0, 1, 42, 123456789, 2**31 - 1, 2**32 - 1]
    calls = [{"fn": "seededScores", "args": [seed, 3, 50]} for seed in seeds]
    for seed, js in zip(seeds, call_js("mask_explorer.js", calls), strict=True):
        rng = masks.seeded_uniform(seed)
        uniforms = [next(rng) for _ in range(150)]
        assert js == seeded_scores(seed, 3, 50).tolist()  # exact: same float64 arithmetic
        assert [4 * u - 2 for u in uniforms] == [x for row in js for x in row]


@needs_node
def test_js_masked_softmax_matches_python_and_gives_zeros_for_fully_masked_rows():
    ws = [MaskExplorer("sliding_window", 8, 3, window=2), MaskExplorer("padding", 6, lengths=[6, 0], batch=1),
          MaskExplorer("bigbird", 16, seed=4), MaskExplorer("causal", 5, scores=torch.randn(5, 5) * 10),
          MaskExplorer("prefix_lm", 9, prefix=4, seed=11)]
    calls = [{"fn": "scoresFor", "args": [explorer_state(w)]} for w in ws]
    calls += [{"fn": "maskedSoftmax", "args": [w.mask().tolist(), w.score_matrix().tolist()]} for w in ws]
    got = call_js("mask_explorer.js", calls)
    for n, w in enumerate(ws):
        scores, weights = got[n], torch.tensor(got[len(ws) + n], dtype=torch.float64)
        assert scores["given"] == bool(w.scores)
        assert torch.equal(torch.tensor(scores["scores"], dtype=torch.float64), w.score_matrix())
        assert_close(weights, w.weights(), atol=1e-12, rtol=0)
    assert (torch.tensor(got[len(ws) + 1]) == 0).all()  # every row of sequence 1 (length 0) is fully masked
    assert (torch.tensor(got[len(ws)])[4:] == 0).all()  # queries 4..7: the window is past the last key


@needs_node
def test_js_similarity_and_circle_point_equal_python():
    p = PositionalEncodingExplorer(max_len=20, d_model=8)
    T = p.encodings["sinusoidal"]
    got = call_js("positional_explorer.js", [{"fn": "dotProfile", "args": [T, q]} for q in (0, 7, 19)]
                  + [{"fn": "pairPoint", "args": [T, 5, 2]}])
    for q, js in zip((0, 7, 19), got[:3], strict=True):  # got[3] is the pairPoint, below
        offsets, dots = p.similarity(q)
        assert js["offsets"] == offsets.tolist()
        assert_close(torch.tensor(js["dots"], dtype=torch.float64), dots, atol=1e-12, rtol=0)
    assert got[3] == [T[5][5], T[5][4]]  # (cos column 2i+1, sin column 2i)


@needs_node
def test_js_head_colours_are_distinct_and_scaling_follows_normalized():
    calls = [{"fn": "headColor", "args": [h]} for h in range(16)]
    calls += [{"fn": "weightScale", "args": [[[[[0.5, 2.0]]]], True]}, {"fn": "weightScale", "args": [[[[[0.5, 2.0]]]], False]},
              {"fn": "shortToken", "args": ["a" * 40]}, {"fn": "shortToken", "args": [""]},
              {"fn": "weightScale", "args": [[[[[0.04, 0.07]]]], True, "heatmap"]}]
    got = call_js("attention_explorer.js", calls)
    assert len(set(got[:16])) == 16
    assert got[16:18] == [1, 2.0]
    assert len(got[18]) == 18 and got[18].endswith("\u2026") and got[19] != ""
    assert got[20] == 0.07, "a heatmap of probabilities spans the data, not 0-1 (weights near 1/25 looked blank)"


@needs_node
@pytest.mark.parametrize("normalized", [True, False])
def test_js_decodes_the_8_bit_weights_to_the_models_within_the_stated_error(normalized):
    g = torch.Generator().manual_seed(5)
    scores = 3 * torch.randn(3, 4, 6, 10, generator=g)
    w = torch.softmax(scores, -1) if normalized else scores.exp()
    w[1, 2, 4] = 0.0  # a fully masked query
    e = AttentionExplorer(list("abcdef"), w, key_tokens=list("0123456789"), normalized=normalized)
    js, plain = call_js("attention_explorer.js", [{"fn": "decodeWeights", "args": [e.weights]},
                                                  {"fn": "decodeWeights", "args": [[[[[0.25, 0.75]]]]]}])
    shown = torch.tensor(js, dtype=torch.float64)
    assert shown.shape == w.shape
    assert torch.equal(shown, e.weight_tensor())  # the same arithmetic as Python's dequantize_rows, bit for bit
    span = w.double().amax(-1, keepdim=True) - w.double().amin(-1, keepdim=True)
    bound = span / 510 + 2.0**-23 * w.double().abs().amax(-1, keepdim=True)
    assert ((shown - w.double()).abs() <= bound).all()
    assert (shown[1, 2, 4] == 0).all()
    assert plain == [[[[0.25, 0.75]]]]  # weights saved before the 8-bit form (nested lists) still draw


# --------------------------------------------------------------------------- the sources themselves
@pytest.mark.parametrize("js", JS_FILES)
def test_modules_are_self_contained_and_never_parse_data_as_html(js):
    src = front_end(js)  # what the widget loads: _dom.js, then the file
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", src, re.M), "no imports: one self-contained module"
    assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg\b)", src), "no requests to other hosts"
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser"):
        assert sink not in src, sink
    for global_lookup in ("getElementById", "document.querySelector", "document.body"):
        assert global_lookup not in src, f"{global_lookup}: everything must be scoped to the widget's el"
    assert "export default { render }" in src


# --------------------------------------------------------------------------- a real browser, if there is one
def _browser():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _browser()
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="Playwright or Chromium is not installed")

# A stand-in for the anywidget model (get/set/on/off/save_changes), as the static page's widget manager gives.
HARNESS = """<!doctype html><html><head><meta charset="utf-8"></head><body><div id="host"></div>
<script type="module">
const items = %s;
window.models = []; window.saved = [];
for (const [n, it] of items.entries()) {
  const style = document.createElement("style"); style.textContent = it.css; document.head.append(style);
  const mod = await import(URL.createObjectURL(new Blob([it.esm], {type: "text/javascript"})));
  const state = it.state, listeners = {};
  const model = {get: (k) => state[k], set(k, v) { state[k] = v; (listeners["change:" + k] || []).slice().forEach((f) => f()); },
    save_changes() { window.saved.push([n, JSON.parse(JSON.stringify(state))]); },
    on(e, f) { (listeners[e] = listeners[e] || []).push(f); }, off(e, f) { listeners[e] = (listeners[e] || []).filter((g) => g !== f); }};
  const el = document.createElement("div"); el.className = "host-" + n; document.getElementById("host").append(el);
  mod.default.render({model, el});
  window.models.push(model);
}
window.ready = true;
</script></body></html>"""


@pytest.fixture
def show(browser):  # `browser`: the session's Chromium from tests/conftest.py (one Playwright per process)
    """Render widgets in a fresh page; fails on any page error or on any request at all (offline)."""
    pages = []

    def _show(*widgets):
        items = []
        for w in widgets:
            st = w.get_state()
            items.append({"esm": st.pop("_esm"), "css": st.pop("_css"), "state": {k: v for k, v in st.items() if not k.startswith("_")}})
        page = browser.new_page(viewport={"width": 760, "height": 900}, accept_downloads=True)
        page.errors, page.requests, page.dialogs = [], [], []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.route("**/*", lambda route: (page.requests.append(route.request.url), route.abort()))
        page.set_content(HARNESS % json.dumps(items).replace("</", "<\\/"))
        page.wait_for_function("window.ready === true", timeout=10_000)
        pages.append(page)
        return page

    yield _show
    for page in pages:
        assert page.errors == [] and page.requests == [] and page.dialogs == []
        page.close()


def grid_of(page, host=0) -> torch.Tensor:
    root = page.locator(f".host-{host} .attn-mask-explorer")
    L, S = int(root.get_attribute("data-l")), int(root.get_attribute("data-s"))
    cells = page.eval_on_selector_all(f".host-{host} .attn-mask-grid [data-allowed]",
                                      "cs => cs.map(c => [+c.dataset.q, +c.dataset.k, c.dataset.allowed === '1'])")
    m = torch.zeros(L, S, dtype=torch.bool)
    for q, k, ok in cells:
        m[q, k] = ok
    assert len(cells) == L * S
    return m


@needs_browser
def test_browser_mask_grid_reads_back_as_attn_masks_and_follows_the_controls(show):
    w = MaskExplorer("causal", 8)
    page = show(w)
    assert torch.equal(grid_of(page), masks.causal(8))
    page.select_option(".host-0 select[name=kind]", "bigbird")
    assert page.locator(".host-0 .attn-mask-explorer").get_attribute("data-kind") == "bigbird"
    assert torch.equal(grid_of(page), masks.bigbird(8, window=2, num_random=2, seed=0))
    page.focus(".host-0 input[name=L]")
    page.keyboard.press("ArrowRight")  # keyboard-operable: L 8 -> 9
    assert torch.equal(grid_of(page), masks.bigbird(9, window=2, num_random=2, seed=0))
    page.click(".host-0 button[name=new_seed]")
    assert torch.equal(grid_of(page), masks.bigbird(9, window=2, num_random=2, seed=1))
    last = page.evaluate("window.saved.at(-1)[1]")
    assert (last["kind"], last["L"], last["seed"]) == ("bigbird", 9, 1)  # written back for a kernel
    density = float(page.locator(".host-0 .attn-mask-explorer").get_attribute("data-density"))
    assert density == pytest.approx(masks.bigbird(9, window=2, num_random=2, seed=1).float().mean().item(), abs=1e-4)


@needs_browser
def test_browser_mask_redraws_when_python_changes_a_trait_and_marks_empty_rows(show):
    page = show(MaskExplorer("padding", 6, lengths=[6, 2]))
    page.evaluate("window.models[0].set('batch', 1)")  # as a message from the kernel would
    assert torch.equal(grid_of(page), masks.padding([6, 2], 6, L=6)[1])
    page.evaluate("window.models[0].set('lengths', [6, 0])")
    root = page.locator(".host-0 .attn-mask-explorer")
    assert root.get_attribute("data-empty-rows") == "0,1,2,3,4,5"
    weights = page.eval_on_selector_all(".host-0 .attn-weights-grid [data-weight]", "cs => cs.map(c => c.dataset.weight)")
    assert set(weights) == {"0.0000"}  # zeros, never NaN
    page.evaluate("window.models[0].set('kind', 'cross_padding'); window.models[0].set('S', 10)")
    assert (root.get_attribute("data-l"), root.get_attribute("data-s")) == ("6", "10")


@needs_browser
def test_browser_tokens_are_text_never_html_and_explorers_do_not_interfere(show):
    toks = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "cat", "</SCRIPT>"]
    a = AttentionExplorer(toks, torch.softmax(torch.randn(2, 3, 4, 4), -1))
    b = AttentionExplorer(toks, torch.softmax(torch.randn(1, 2, 4, 4), -1), view="heatmap")
    page = show(a, b)
    assert page.locator("#host img, #host script").count() == 0
    labels = page.eval_on_selector_all(".host-0 .attn-tok title", "ts => ts.map(t => t.textContent)")
    assert labels == [f"query {i}: {t}" for i, t in enumerate(toks)]
    page.hover(".host-0 .attn-tok[data-q='2']")
    assert page.locator(".host-0 .attn-head-view").get_attribute("data-highlight") == "2"
    assert page.locator(".host-1 .attn-head-view").get_attribute("data-highlight") == ""
    visible = page.eval_on_selector_all(".host-0 line.attn-line", "ls => ls.filter(l => l.getAttribute('visibility') === 'visible').map(l => +l.dataset.q)")
    assert visible and set(visible) == {2}


@needs_browser
def test_browser_head_view_controls_and_keyboard(show):
    w = torch.softmax(torch.randn(2, 3, 5, 5), -1)
    e = AttentionExplorer(list("abcde"), w)
    page = show(e)
    root = page.locator(".host-0 .attn-head-view")
    page.focus(".host-0 .attn-tok[data-q='3']")
    page.keyboard.press("Enter")  # pin query 3
    assert root.get_attribute("data-query") == "3"
    assert page.evaluate("window.saved.at(-1)[1].query") == 3
    page.focus(".host-0 button[name=head][value='1']")
    page.keyboard.press("Space")  # toggle head 2 off from the keyboard; focus stays on the toggle
    assert root.get_attribute("data-heads") == "0,2"
    assert page.evaluate("document.activeElement.name + document.activeElement.value") == "head1"
    assert page.locator(".host-0 line.attn-line[data-h='1']").count() == 0
    page.select_option(".host-0 select[name=layer]", "1")
    page.click(".host-0 button[name=view][value=heatmap]")
    cells = page.eval_on_selector_all(".host-0 rect.attn-cell", "cs => cs.map(c => [+c.dataset.h, +c.dataset.q, +c.dataset.k, +c.dataset.w])")
    assert len(cells) == 2 * 5 * 5
    for h, q, k, v in cells:
        assert v == e.weight_tensor()[1, h, q, k].item()  # decoded in the browser exactly as in Python
        assert v == pytest.approx(w[1, h, q, k].item(), abs=1 / 510)  # within the 8-bit error of the model's


@needs_browser
def test_browser_exports_the_current_view_as_svg_and_png(show):
    page = show(AttentionExplorer(["<b>x</b>", "y"], torch.tensor([[[0.3, 0.7], [1.0, 0.0]]])))
    with page.expect_download() as d:
        page.click(".host-0 button[name=export][value=svg]")
    svg = pathlib.Path(d.value.path()).read_text()
    assert d.value.suggested_filename == "attention-layer1-lines.svg"
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    with page.expect_download() as d:
        page.click(".host-0 button[name=export][value=png]")
    assert pathlib.Path(d.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_browser
def test_browser_positional_point_follows_the_position_slider(show):
    p = PositionalEncodingExplorer(max_len=16, d_model=8, pair=1)
    page = show(p)
    page.fill(".host-0 input[name=position]", "5")
    root = page.locator(".host-0 .attn-pe-explorer")
    assert root.get_attribute("data-position") == "5"
    point = page.locator(".host-0 circle.attn-pe-point")
    T = p.table()
    assert float(point.get_attribute("data-x")) == pytest.approx(T[5, 3].item(), abs=1e-4)
    assert float(point.get_attribute("data-y")) == pytest.approx(T[5, 2].item(), abs=1e-4)
    dots = [float(x) for x in page.locator(".host-0 .attn-pe-curve").get_attribute("data-dots").split(",")]
    assert_close(torch.tensor(dots, dtype=torch.float64), p.similarity(5)[1], atol=1e-4, rtol=0)
