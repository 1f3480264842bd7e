"""InductionExplorer: the trained two-layer attention-only model reads a repeated segment in the page.

Python: the segment is checked; reading() is PyTorch's model on the segment repeated to 40 positions,
heads silenced through MultiHeadAttention.head_mask; the previous-token and induction heads named in
the state are the ones attn.book.induction_heads.head_scores measures. Node: the explorer's own module
(front_end("induction_explorer.js", parts=("_dom.js", "_nn.js")), what the widget loads) reads a
segment as PyTorch does, every layer and head, with and without heads ablated. Chromium: the explorer
alone on a page with the static site's runtime, offline: typing, the guesses turning right in the
repeat, the induction head looking one past the earlier occurrence, ablation, the keyboard, the phone,
and the first response to an edit with the CPU throttled 4x.
"""

import gzip
import json
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest
import torch
from torch.testing import assert_close

from attn.book.widgets import InductionExplorer, state_size_bytes
from attn.book.widgets._state import front_end
from attn.book.widgets.induction_explorer import LENGTH, VOCAB, sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "attn" / "book" / "widgets"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the explorer's JavaScript cannot be run")
MODULE = ("induction_explorer.js", ("_dom.js", "_nn.js"))
TOL = dict(atol=1e-5, rtol=0)  # the page's float64 against PyTorch's float32, both on the float16 weights


@pytest.fixture(scope="module")
def explorer() -> InductionExplorer:
    return InductionExplorer("python")


def call_module(calls: list[dict]) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "induction_explorer.js"
        path.write_text(front_end(MODULE[0], parts=MODULE[1]))
        out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(path)], input=json.dumps(calls),
                             capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def successors(seq: str, q: int) -> list[int]:
    """The keys one past an earlier occurrence of the letter at ``q``: j <= q with seq[j - 1] == seq[q]."""
    return [j for j in range(1, q + 1) if seq[j - 1] == seq[q]]


def ind(explorer) -> tuple[int, int]:
    return tuple(explorer.heads["induction"])


def prev(explorer) -> tuple[int, int]:
    return tuple(explorer.heads["previous"])


# --------------------------------------------------------------------------- Python
def test_the_explorer_carries_the_model_the_measured_heads_and_pytorchs_guesses(explorer):
    from attn.book import induction_heads

    assert explorer.model["format"] == "attn-model/1" and explorer.model["vocab"] == list(VOCAB)
    c = explorer.model["config"]
    assert (c["num_layers"], c["num_heads"], c["d_ff"], c["max_len"], c["vocab_size"]) == (2, 4, 0, LENGTH, 26)
    scores = induction_heads.head_scores(explorer._torch_model, *induction_heads.held_out())
    p, i = (scores[k].double() for k in ("previous_token", "induction"))
    assert_close(torch.tensor(explorer.heads["previous_scores"], dtype=torch.float64), p, atol=1e-4, rtol=0)
    assert_close(torch.tensor(explorer.heads["induction_scores"], dtype=torch.float64), i, atol=1e-4, rtol=0)
    assert p[prev(explorer)] == p.max() and i[ind(explorer)] == i.max()
    assert prev(explorer)[0] == 0 and ind(explorer)[0] == 1, "previous-token head in layer 1, induction head in layer 2"
    r = explorer.reading()
    assert explorer.guesses == "".join(VOCAB[k] for k in r["probs"].argmax(-1).tolist()) and len(explorer.guesses) == 40
    assert repr(explorer) == f"InductionExplorer(segment='python', ablated=[], guesses={explorer.guesses!r})"
    assert explorer.get_state()["_esm"] == front_end(MODULE[0], parts=MODULE[1])


@pytest.mark.parametrize(("segment", "match"), [
    ("", r"segment must be a non-empty string"),
    ("Hello world", r"segment has characters outside a-z: \[' ', 'H'\]"),
    ("abcdefghijklmnopqrstu", r"segment has 21 letters, at most 20"),
    (5, r"segment must be a non-empty string .* got 5"),
])
def test_bad_segments_are_refused_naming_the_argument_and_the_characters(explorer, segment, match):
    with pytest.raises(ValueError, match=match):
        InductionExplorer(segment, model=explorer._torch_model)
    if isinstance(segment, str):  # (traitlets itself refuses a number for a text trait)
        with pytest.raises(ValueError, match=match):
            explorer.segment = segment
    assert explorer.segment == "python"


def test_bad_ablated_heads_are_refused_and_pairs_are_kept_sorted(explorer):
    for bad, match in (([[2, 0]], r"ablated\[0\]\[0\] \(the layer\) must lie in \[0, layers=2\), got 2"),
                       ([[0, 1], [0, 4]], r"ablated\[1\]\[1\] \(the head\) must lie in \[0, H=4\), got 4"),
                       ([[0]], r"ablated must list \[layer, head\] pairs, got \[0\] at ablated\[0\]"),
                       ([["a", 1]], r"ablated\[0\]\[0\] \(the layer\) must be an integer")):
        with pytest.raises(ValueError, match=match):
            explorer.ablated = bad
    explorer.ablated = [[1, 2], [0, 1], [1, 2]]
    assert explorer.ablated == [[0, 1], [1, 2]]
    explorer.ablated = []


def test_reading_is_the_segment_repeated_and_the_models_causal_attention(explorer):
    assert sequence("python") == ("python" * 7)[:40] and sequence("ab")[:5] == "ababa"
    r = explorer.reading()
    assert r["sequence"] == sequence("python") and r["period"] == 6
    assert r["weights"].shape == (2, 4, 40, 40) and r["probs"].shape == (40, 26) and r["right"].shape == (39,)
    assert_close(r["weights"].sum(-1), torch.ones(2, 4, 40))
    assert r["weights"].triu(1).eq(0).all(), "causal: no query sees a later letter"
    assert_close(r["probs"].sum(-1), torch.ones(40))
    ids = torch.tensor([VOCAB.index(c) for c in r["sequence"]])
    assert torch.equal(r["right"], r["probs"][:-1].argmax(-1) == ids[1:])


def test_silencing_a_head_is_its_head_mask_and_leaves_the_model_as_it_was(explorer):
    model, layer, head = explorer._torch_model, *ind(explorer)
    r = explorer.reading(ablated=[[layer, head]])
    assert all(a.self_attn.head_mask is None for a in model.layers), "reading() leaves no head silenced"
    ids = torch.tensor([[VOCAB.index(c) for c in sequence("python")]])
    mask = torch.ones(4)
    mask[head] = 0
    model.layers[layer].self_attn.head_mask = mask
    try:
        with torch.no_grad():
            ref = torch.softmax(model(ids)[0], -1)
    finally:
        model.layers[layer].self_attn.head_mask = None
    assert_close(r["probs"], ref)
    full = explorer.reading()
    assert not torch.allclose(r["probs"], full["probs"], atol=1e-3), "the silenced head changed the guesses' probabilities"
    assert_close(r["weights"][0], full["weights"][0], atol=0, rtol=0)  # layer 1 comes before the silenced head
    assert_close(explorer.reading(ablated=[])["probs"], full["probs"], atol=0, rtol=0)


def test_the_one_layer_control_runs_too_and_cannot_copy():
    from attn.book import induction_heads

    e = InductionExplorer("wordplay", model=induction_heads.load("induction_1layer"))
    assert e.model["config"]["num_layers"] == 1 and len(e.heads["induction_scores"]) == 1
    r = e.reading()
    assert r["weights"].shape == (1, 4, 40, 40)
    assert r["right"][8:].float().mean() <= 0.5, "one layer: no induction head, no copying"
    if NODE is not None:
        js = call_module([{"fn": "inductionReading", "args": [e.model, "wordplay", [[0, 1]]]}])[0]
        ref = e.reading(ablated=[[0, 1]])
        assert_close(torch.tensor(js["attention"], dtype=torch.float64), ref["weights"].double(), **TOL)
        assert_close(torch.tensor(js["probs"], dtype=torch.float64), ref["probs"].double(), **TOL)


SEGMENTS = ["python", "qzmvkradnw", "wordplay", "abcdefghijklmnopqrst", "heads"]  # distinct letters: one successor each


@pytest.mark.parametrize("segment", SEGMENTS)
def test_the_trained_model_copies_in_the_repeat_and_its_induction_head_looks_one_past_the_earlier_occurrence(explorer,
                                                                                                             segment):
    explorer.segment = segment
    try:
        r, n = explorer.reading(), len(segment)
        first, repeat = r["right"][:n].float().mean(), r["right"][n:].float().mean()
        assert repeat >= 0.9 and first <= 0.5, (segment, first, repeat)
        W = r["weights"][ind(explorer)]  # (L, L)
        seq = r["sequence"]
        on = [float(W[q, successors(seq, q)].sum()) for q in range(n, 40)]  # the keys one past each earlier occurrence
        hits = [int(W[q].argmax()) in successors(seq, q) for q in range(n, 40)]
        assert sum(on) / len(on) >= 0.6 and sum(hits) >= 0.8 * len(hits), (segment, on, hits)
        P = r["weights"][prev(explorer)]
        assert (P[torch.arange(1, 40)].argmax(-1) == torch.arange(0, 39)).float().mean() >= 0.6, "it looks one back"
        # The induction heads are redundant: one silenced, the repeat stays right; all four, it is lost.
        alone = explorer.reading(ablated=[list(ind(explorer))])["right"][n:].float().mean()
        layer2 = explorer.reading(ablated=[[1, h] for h in range(4)])["right"][n:].float().mean()
        assert alone >= repeat - 0.2 and layer2 <= 0.3, (segment, repeat, alone, layer2)
    finally:
        explorer.segment = "python"


# --------------------------------------------------------------------------- node: the page's numbers
@needs_node
def test_the_page_reads_a_segment_as_pytorch_does_every_layer_and_head_with_heads_silenced(explorer):
    cases = [("python", []), ("induction", []), ("abcdefghijklmnopqrst", []), ("a", []), ("python", [list(ind(explorer))]),
             ("qzmvkradnw", [list(prev(explorer))]), ("heads", [[0, 0], [0, 3], [1, 1], [1, 2]])]
    got = call_module([{"fn": "inductionReading", "args": [explorer.model, s, a]} for s, a in cases])
    for (segment, ablated), js in zip(cases, got, strict=True):
        explorer.segment = segment
        ref = explorer.reading(ablated=ablated)
        assert_close(torch.tensor(js["attention"], dtype=torch.float64), ref["weights"].double(), **TOL)
        assert_close(torch.tensor(js["probs"], dtype=torch.float64), ref["probs"].double(), **TOL)
        assert js["right"] == ref["right"].tolist(), (segment, ablated)
        n, ids = len(segment), torch.tensor([VOCAB.index(c) for c in ref["sequence"]])
        p_right = ref["probs"][:-1].double().gather(1, ids[1:, None])[:, 0]  # (L - 1,) the probability of the right letter
        first, repeat = js["accuracy"]["first"], js["accuracy"]["repeat"]
        assert first[:2] == [int(ref["right"][:n].sum()), min(n, 39)] and repeat[:2] == [int(ref["right"][n:].sum()), 39 - n]
        assert first[2] == pytest.approx(float(p_right[:n].mean()), abs=1e-5)
        assert repeat[2] == pytest.approx(float(p_right[n:].mean()), abs=1e-5) if n < 39 else repeat[2] == 0
    explorer.segment = "python"


@needs_node
def test_the_page_refuses_what_python_refuses_and_draws_random_segments_of_distinct_letters():
    bad = ["", "Hello world", "abcdefghijklmnopqrstu", "<b>x</b>"]
    calls = [{"fn": "segmentProblem", "args": [s]} for s in ["python", *bad]]
    calls += [{"fn": "randomSegment", "args": [seed]} for seed in (1, 2, 3, 1, 12345)]
    calls += [{"fn": "repeatTo", "args": ["python", 40]}, {"fn": "headMaskOf", "args": [[[1, 2], [0, 0]], 2, 4]}]
    ok, empty, upper, long, html, *rest = call_module(calls)
    randoms, repeated, mask = rest[:5], rest[5], rest[6]
    assert ok == "" and "at least one letter" in empty and "at most 20" in long
    assert '" "' in upper and '"H"' in upper and '"<"' in html and '"b"' not in html
    for segment in bad:
        with pytest.raises(ValueError):
            sequence(segment)  # Python refuses the same segments
    assert randoms[0] == randoms[3] and len(set(randoms)) == 4, "seeded: the same seed, the same segment"
    for s in randoms:
        assert 8 <= len(s) <= 12 and len(set(s)) == len(s) and re.fullmatch("[a-z]+", s), s
    assert repeated == sequence("python") and mask == [[0, 1, 1, 1], [1, 1, 0, 1]]


def test_the_module_is_self_contained_and_never_parses_text_as_html():
    src = front_end(*MODULE[:1], parts=MODULE[1])
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", src, re.M), "one self-contained module"
    assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg\b)", src), "no requests to other hosts"
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser",
                 "getElementById", "document.querySelector", "document.body"):
        assert sink not in src, sink
    own = (WIDGETS / "induction_explorer.js").read_text()
    shown = re.findall(r'h\("[a-z]+", \{[^}]*\}, "([^"]+)"\)', own)
    assert shown == [], f"strings shown to the reader belong in the TEXT table: {shown}"


def test_the_state_and_the_code_fit_the_page_budget(explorer):
    """A widget that carries a model's weights saves under 350 kB (tests/test_browser.py); the page's
    weights, maths and runtime together well within the 1 MB a page with explorers may transfer."""
    state = json.dumps(explorer.get_state(), separators=(",", ":")).encode()
    assert state_size_bytes(explorer) < 350_000
    wire = len(gzip.compress(state, 6)) + len(gzip.compress((WIDGETS / "static_runtime.js").read_bytes(), 6))
    print(f"\nInductionExplorer: state {len(state) / 1e3:.0f} kB, {wire / 1e3:.0f} kB on the wire (gzip) with the runtime")
    assert wire < 250_000, wire


# --------------------------------------------------------------------------- Chromium, as the site serves it
from test_live_explorers import FIRST_RESPONSE, site  # noqa: E402, F401  (the static site's runtime, offline; the timing)

SHOWN = """() => {
  const root = document.querySelector(".attn-ind-explorer");
  const cells = [...root.querySelectorAll(".attn-ind-cell")].map((c) => ({
    pos: +c.dataset.pos, weight: +c.dataset.weight, guess: c.dataset.guess, prob: +c.dataset.prob, right: c.dataset.right,
    text: c.textContent, query: c.classList.contains("attn-ind-query"), target: c.classList.contains("attn-ind-target")}));
  return { state: root.dataset.state, period: +root.dataset.period, query: +root.dataset.query, head: root.dataset.head,
    first: root.dataset.first, repeat: root.dataset.repeat, firstProb: +root.dataset.firstProb,
    repeatProb: +root.dataset.repeatProb, cells, said: root.querySelector(".attn-ind-said").textContent,
    summary: root.querySelector(".attn-ind-summary").textContent };
}"""


def assert_shows_pytorch(page, explorer, segment: str, ablated=()) -> dict:
    """The page shows PyTorch's reading: every guess and its probability, the chosen head's row of weights."""
    explorer.segment = segment
    ref = explorer.reading(ablated=[list(p) for p in ablated])
    got = page.evaluate(SHOWN)
    n, q = len(segment), got["query"]
    assert (got["state"], got["period"], len(got["cells"])) == ("ok", n, 40)
    guesses = ref["probs"].argmax(-1)
    assert "".join(c["guess"] for c in got["cells"]) == "".join(VOCAB[i] for i in guesses.tolist())
    assert_close(torch.tensor([c["prob"] for c in got["cells"]], dtype=torch.float64),
                 ref["probs"].double().gather(1, guesses[:, None])[:, 0], **TOL)
    assert [c["right"] for c in got["cells"]] == [str(b).lower() for b in ref["right"].tolist()] + ["null"]
    layer, head = map(int, got["head"].split(","))
    row = ref["weights"][layer, head, q].double()
    assert_close(torch.tensor([c["weight"] for c in got["cells"]], dtype=torch.float64), row, **TOL)
    assert [c["pos"] for c in got["cells"] if c["query"]] == [q]
    assert [c["pos"] for c in got["cells"] if c["target"]] == successors(ref["sequence"], q)
    right = ref["right"]
    assert got["first"] == f"{int(right[:n].sum())}/{min(n, 39)}" and got["repeat"] == f"{int(right[n:].sum())}/{39 - n}"
    ids = torch.tensor([VOCAB.index(c) for c in ref["sequence"]])
    p_right = ref["probs"][:-1].double().gather(1, ids[1:, None])[:, 0]
    assert got["firstProb"] == pytest.approx(float(p_right[:n].mean()), abs=1e-5)
    assert got["repeatProb"] == pytest.approx(float(p_right[n:].mean()), abs=1e-5)
    assert f"{float(p_right[n:].mean()):.2f}." in got["summary"]
    return got


def test_browser_typing_a_segment_shows_the_guesses_turn_right_in_the_repeat_as_pytorch(site, explorer):  # noqa: F811
    page = site(explorer)
    got = assert_shows_pytorch(page, explorer, "python")
    assert got["head"] == "{},{}".format(*ind(explorer)), "the induction head is shown first"
    assert got["query"] == 8 and 'on the letters after earlier "t"' in got["said"]
    page.fill(".attn-ind-explorer input[name=segment]", "qzmvkradnw")
    got = assert_shows_pytorch(page, explorer, "qzmvkradnw")
    right, of = map(int, got["repeat"].split("/"))
    assert right >= 0.9 * of and int(got["first"].split("/")[0]) <= 5, got["summary"]
    # the induction head's weight from a query in the repeat is largest one past an earlier occurrence
    for q in (12, 25, 38):
        page.click(f".attn-ind-explorer .attn-ind-cell[data-pos='{q}']")
        got = assert_shows_pytorch(page, explorer, "qzmvkradnw")
        weights = [c["weight"] for c in got["cells"]]
        assert got["query"] == q and max(range(40), key=weights.__getitem__) in successors(sequence("qzmvkradnw"), q)
        assert [c["pos"] for c in got["cells"] if c["target"]] == list(range(q % 10 + 1, q + 1, 10))
    assert page.evaluate("window.attnWidgets.models.get('w0').get('segment')") == "qzmvkradnw", "written back for a kernel"
    explorer.segment = "python"


def test_browser_silencing_the_induction_heads_makes_the_repeat_wrong_again(site, explorer):  # noqa: F811
    page = site(explorer)
    layer, head = ind(explorer)
    box = f".attn-ind-explorer input[name=ablate][data-layer='{layer}'][data-head='{head}']"
    label = page.locator(f".attn-ind-explorer label:has(input[name=ablate][data-layer='{layer}'][data-head='{head}'])")
    score = explorer.heads["induction_scores"][layer][head]
    assert " ".join(label.inner_text().split()) == f"L{layer + 1}H{head + 1} induction {score:.2f}"
    assert page.get_by_role("checkbox", name=" ".join(label.inner_text().split()), exact=True).count() == 1, "named as shown"
    before = assert_shows_pytorch(page, explorer, "python")
    page.check(box)  # one induction head silenced: the others still copy (they are redundant)
    alone = assert_shows_pytorch(page, explorer, "python", ablated=[(layer, head)])
    layer_box = ".attn-ind-explorer input[name=ablate-layer][data-layer='1']"
    assert page.evaluate(f"document.querySelector(\"{layer_box}\").indeterminate")
    page.check(layer_box)  # all of layer 2: the repeat is lost
    silenced = [(1, h) for h in range(4)]
    after = assert_shows_pytorch(page, explorer, "python", ablated=silenced)
    assert "This head is silenced" in after["said"] and "silenced" not in before["said"]
    r0, r1, r2 = (int(g["repeat"].split("/")[0]) for g in (before, alone, after))
    assert r1 >= r0 - 3 and r2 <= 0.3 * 33, (before["summary"], alone["summary"], after["summary"])
    assert page.evaluate("window.attnWidgets.models.get('w0').get('ablated')") == [list(p) for p in silenced]
    page.fill(".attn-ind-explorer input[name=segment]", "wordplay")  # a new segment keeps the heads silenced
    assert_shows_pytorch(page, explorer, "wordplay", ablated=silenced)
    page.uncheck(layer_box)
    assert_shows_pytorch(page, explorer, "wordplay")
    page.evaluate(f"window.attnWidgets.models.get('w0').set('ablated', [[{layer}, {head}]])")  # set from a kernel
    assert page.is_checked(box) and not page.is_checked(layer_box)
    assert_shows_pytorch(page, explorer, "wordplay", ablated=[(layer, head)])
    explorer.segment = "python"


def test_browser_keyboard_chooses_the_query_the_head_and_the_silenced_heads(site, explorer):  # noqa: F811
    page = site(explorer)
    page.focus(".attn-ind-explorer .attn-ind-seq")
    page.keyboard.press("Home")
    assert assert_shows_pytorch(page, explorer, "python")["query"] == 0
    page.keyboard.press("ArrowDown")  # one row down: the same letter one period later
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    got = assert_shows_pytorch(page, explorer, "python")
    assert got["query"] == 13 and [c["pos"] for c in got["cells"] if c["target"]] == [2, 8]
    page.keyboard.press("End")
    assert assert_shows_pytorch(page, explorer, "python")["query"] == 39
    page.keyboard.press("ArrowLeft")
    assert assert_shows_pytorch(page, explorer, "python")["query"] == 38
    page.focus(".attn-ind-explorer select[name=head]")  # the previous-token head, from the keyboard
    target = "{},{}".format(*prev(explorer))
    options = page.eval_on_selector_all(".attn-ind-explorer select[name=head] option", "os => os.map(o => o.value)")
    for _ in range(abs(options.index(target) - options.index("{},{}".format(*ind(explorer))))):
        page.keyboard.press("ArrowUp" if options.index(target) < options.index("{},{}".format(*ind(explorer))) else "ArrowDown")
    got = assert_shows_pytorch(page, explorer, "python")
    assert got["head"] == target and "previous-token" in got["said"]
    layer, head = ind(explorer)
    page.focus(f".attn-ind-explorer input[name=ablate][data-layer='{layer}'][data-head='{head}']")
    page.keyboard.press("Space")
    assert_shows_pytorch(page, explorer, "python", ablated=[(layer, head)])
    page.focus(".attn-ind-explorer button[name=random]")
    page.keyboard.press("Enter")
    segment = page.input_value(".attn-ind-explorer input[name=segment]")
    assert 8 <= len(segment) <= 12 and len(set(segment)) == len(segment)
    assert_shows_pytorch(page, explorer, segment, ablated=[(layer, head)])
    explorer.segment = "python"


def test_browser_bad_segments_show_a_message_and_keep_the_last_reading(site, explorer):  # noqa: F811
    page = site(explorer)
    note = page.locator(".attn-ind-explorer .attn-note")
    field = ".attn-ind-explorer input[name=segment]"
    for text, says in (("Python", '"P"'), ("", "at least one letter"), ("a" * 21, "at most 20"), ("<b>hi</b>", '"<"')):
        page.fill(field, text)
        assert note.is_visible() and says in note.inner_text(), text
        assert page.get_attribute(".attn-ind-explorer", "data-state") == "invalid"
        assert page.get_attribute(field, "aria-invalid") == "true"
        assert page.locator(".attn-ind-explorer b").count() == 0, "shown as text, never as HTML"
    page.fill(field, "heads")
    assert not note.is_visible()
    assert_shows_pytorch(page, explorer, "heads")
    explorer.segment = "python"


def test_browser_fits_390_px_and_answers_an_edit_within_100_ms_at_4x_cpu_throttle(site, explorer):  # noqa: F811
    from test_mobile import assert_fits_the_phone

    page = site(explorer, width=390)
    page.fill(".attn-ind-explorer input[name=segment]", "abcdefghijklmnopqrst")  # the widest: 20 letters a row
    lay = assert_fits_the_phone(page)
    box = page.evaluate("(() => { const r = document.querySelector('.attn-ind-seq').getBoundingClientRect(); "
                        "return [r.left, r.right]; })()")
    assert box[0] >= 0 and box[1] <= 390, (box, lay)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    segments = ["qzmvkradnw", "qzmvkradn", "qzmvkradnwx", "python", "pythons", "abcdefghijklmnopqrst", "induction",
                "inductions", "heads", "header", "qzmvkradnw"]
    typed = page.evaluate(FIRST_RESPONSE, [".attn-ind-explorer input[name=segment]", segments])
    layer, head = ind(explorer)
    toggles = page.evaluate("""async ([sel, n]) => {
      const box = document.querySelector(sel), root = box.closest(".attn-w"), sync = [];
      for (let k = 0; k < n; k++) {
        const t0 = performance.now();
        box.click();
        void root.offsetHeight;
        sync.push(performance.now() - t0);
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      }
      return sync;
    }""", [f".attn-ind-explorer input[name=ablate][data-layer='{layer}'][data-head='{head}']", 11])
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"\nInductionExplorer at 4x CPU throttle, first response, median (max) ms: a typed segment "
          f"{median(typed[0]):.1f} ({max(typed[0]):.1f}), painted {median(typed[1]):.1f}; a head silenced or "
          f"restored {median(toggles):.1f} ({max(toggles):.1f})")
    assert median(typed[0]) < 100 and median(toggles) < 100, (typed, toggles)
    assert_shows_pytorch(page, explorer, "qzmvkradnw", ablated=[(layer, head)])  # 11 clicks: silenced
    explorer.segment = "python"


def test_browser_shows_the_one_layer_control_with_its_four_heads(site):  # noqa: F811
    from attn.book import induction_heads

    e = InductionExplorer("wordplay", model=induction_heads.load("induction_1layer"))
    page = site(e)
    assert page.locator(".attn-ind-explorer select[name=head] option").count() == 4
    assert page.locator(".attn-ind-explorer input[name=ablate]").count() == 4
    assert_shows_pytorch(page, e, "wordplay")
    page.check(".attn-ind-explorer input[name=ablate-layer][data-layer='0']")
    assert_shows_pytorch(page, e, "wordplay", ablated=[(0, h) for h in range(4)])
