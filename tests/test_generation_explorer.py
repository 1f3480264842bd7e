"""GenerationExplorer: Python checks the prompt and generates with PyTorch; the page generates the same.

The front end's maths (_nn.js) is proven equal to PyTorch in tests/test_nn_js.py; here the explorer's
own module (front_end("generation_explorer.js", parts=("_dom.js", "_nn.js")), what the widget loads)
runs under node and must continue a prompt exactly as Python's ``generated`` says, and refuse what
Python refuses, with a message the reader sees.
"""

import json
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from attn.widgets import GenerationExplorer
from attn.widgets._state import front_end

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH")


@pytest.fixture(scope="module")
def explorer() -> GenerationExplorer:
    return GenerationExplorer("the attention ", max_new_tokens=20)


def call_module(calls: list[dict]) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "generation_explorer.js"
        path.write_text(front_end("generation_explorer.js", parts=("_dom.js", "_nn.js")))
        out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_esm.mjs"), str(path)], input=json.dumps(calls),
                             capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_explorer_carries_the_model_and_pytorchs_continuation(explorer):
    assert explorer.model["format"] == "attn-model/1" and explorer.model["vocab"][3] == " "
    assert len(explorer.generated) == 20 and explorer.generated == explorer.continuation()
    assert repr(explorer) == f"GenerationExplorer(prompt='the attention ', generated={explorer.generated!r})"
    assert explorer.get_state()["_esm"] == front_end("generation_explorer.js", parts=("_dom.js", "_nn.js"))


@pytest.mark.parametrize(("prompt", "max_new", "match"), [
    ("The model", 4, r"characters the model does not know: \['T'\]"),
    ("", 4, "prompt must be a non-empty string"),
    ("a" * 60, 5, "65 positions, but the model's context is 64"),
    ("abc", 0, "max_new_tokens must be a positive integer"),
])
def test_bad_prompts_are_refused_naming_the_argument(prompt, max_new, match):
    with pytest.raises(ValueError, match=match):
        GenerationExplorer(prompt, max_new)


def test_live_changes_are_checked_and_regenerate(explorer):
    with pytest.raises(ValueError, match="does not know"):
        explorer.prompt = "Hello"
    assert explorer.prompt == "the attention "
    explorer.prompt = "a cache "
    assert explorer.generated == explorer.continuation() and len(explorer.generated) == 20
    explorer.prompt = "the attention "


@needs_node
def test_the_page_generates_what_python_generated_and_refuses_what_python_refuses(explorer):
    spec, vocab = explorer.model, explorer.model["vocab"]
    prompts = ["the attention ", "a cache ", "keys and values, "]
    calls = [{"fn": "continuation", "args": [spec, p, 20]} for p in prompts]
    calls += [{"fn": "promptProblem", "args": [vocab, 64, p, n]} for p, n in
              [("the attention ", 20), ("The <b>model</b>", 4), ("", 4), ("a" * 60, 5), ("a" * 44, 20)]]
    got = call_module(calls)
    for prompt, js in zip(prompts, got[:3], strict=True):
        explorer.prompt = prompt
        assert js == explorer.generated, prompt
    explorer.prompt = "the attention "
    ok, unknown, empty, long, edge = got[3:]
    assert ok == "" and edge == ""  # 44 + 20 = 64 positions: exactly the context
    assert '"T"' in unknown and '"<"' in unknown and '"M"' not in unknown and "lower-case" in unknown
    assert "Type a prompt" in empty
    assert "65 positions, but the model's context is 64" in long
    for js_refuses, prompt, n in [(unknown, "The <b>model</b>", 4), (long, "a" * 60, 5)]:
        with pytest.raises(ValueError):
            GenerationExplorer(prompt, n)  # Python refuses the same prompts
        assert js_refuses


def test_the_module_is_self_contained_offline_and_never_parses_data_as_html():
    import re

    src = front_end("generation_explorer.js", parts=("_dom.js", "_nn.js"))
    assert not re.search(r"^\s*import\b|\bimport\s*\(|\brequire\s*\(", src, re.M), "no imports: one self-contained module"
    assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg\b)", src), "no requests to other hosts"
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser",
                 "getElementById", "document.querySelector", "document.body"):
        assert sink not in src, sink
    assert "export default { render }" in src


# --------------------------------------------------------------------------- a real browser, if there is one
from test_widgets_js import needs_browser, show  # noqa: E402, F401  (the offline harness page and its fixture)


@needs_browser
def test_browser_reader_types_a_prompt_steps_and_sees_the_cache_fill_and_pytorchs_text(show, explorer):  # noqa: F811
    page = show(explorer)
    root = page.locator(".host-0 .attn-gen-explorer")
    page.fill(".host-0 input[name=prompt]", "a cache ")
    assert root.get_attribute("data-valid") == "true" and root.get_attribute("data-cache-length") == "0"
    page.click(".host-0 button[name=step]")  # the prompt's 8 characters at once: 8 rows, one new character
    assert root.get_attribute("data-cache-length") == "8" and root.get_attribute("data-steps") == "1"
    cache = page.locator(".host-0 canvas.attn-gen-cache")
    assert cache.get_attribute("data-rows") == "8" and json.loads(cache.get_attribute("data-chars")) == list("a cache ")
    page.focus(".host-0 button[name=step]")
    for _ in range(19):
        page.keyboard.press("Enter")  # keyboard-operable: one row more per step
    assert root.get_attribute("data-cache-length") == "27" and cache.get_attribute("data-rows") == "27"
    assert page.locator(".host-0 button[name=step]").is_disabled()  # 20 characters generated: done
    explorer.prompt = "a cache "
    assert root.get_attribute("data-generated") == explorer.generated  # the page computed what PyTorch generated
    weights = [float(w) for w in cache.get_attribute("data-weights").split(",")]
    assert len(weights) == 27 and sum(weights) == pytest.approx(1.0, abs=1e-5)  # the newest query's weights (head mean)
    assert page.evaluate("window.saved.at(-1)[1].prompt") == "a cache "  # written back for a kernel
    explorer.prompt = "the attention "


@needs_browser
def test_browser_refuses_unknown_characters_and_a_too_long_prompt_with_a_visible_message(show, explorer):  # noqa: F811
    page = show(explorer)
    root, note = page.locator(".host-0 .attn-gen-explorer"), page.locator(".host-0 .attn-note")
    page.fill(".host-0 input[name=prompt]", "The <b>model</b>")
    assert root.get_attribute("data-valid") == "false" and note.is_visible()
    assert '"T"' in note.inner_text() and page.locator("#host b").count() == 0  # shown as text, never as HTML
    assert page.locator(".host-0 button[name=step]").is_disabled()
    page.fill(".host-0 input[name=prompt]", "a" * 50)
    assert "context is 64" in note.inner_text() and note.is_visible()
    page.fill(".host-0 input[name=prompt]", "ok ")
    assert root.get_attribute("data-valid") == "true" and not note.is_visible()
