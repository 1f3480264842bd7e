"""The static site's own widget runtime (src/attn/book/widgets/static_runtime.js).

It replaces the generic widget bundle on the site's pages: it reads the page's saved widget state (in
the page, or on the built site from the file of the site the page names: _ext/attn_widget_state.py),
imports each anywidget's own ES module and calls its render with a small model, as each view nears the screen. Checked here: the
model's events under node (Backbone's rules: an event per changed key, none for an equal value), and a
page in Chromium with two views of one model (they stay in step), a model that is not an anywidget
(not drawn) and a widget whose render fails (reported, the others still drawn); a page whose state is
a file of the site: fetched from the page's host, views drawn as they are scrolled to, or once the page is idle. The explorers on the
built site are checked by tests/test_browser.py and tests/test_mobile.py; their page weights there too.
"""

import json
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "src" / "attn" / "book" / "widgets" / "static_runtime.js"
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not on PATH")
def test_model_fires_one_event_per_changed_key_and_none_for_equal_values():
    out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "runtime_model.mjs"), str(RUNTIME)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # set a=2; a=2 again; an equal list; {a: 3, list: [1, 2, 3]}; an equal nested object; off; a=4
    assert r["seen"] == [["change:a", 2, True], ["change"],
                         ["change:a", 3, True], ["change:a", [1, 2, 3], True], ["change"],
                         ["change"]]
    assert r["a"] == 4 and r["list"] == [1, 2, 3]
    assert r["saves"] == [["a", "list", "obj"]], "save_changes records the keys set since the last save"
    assert r["sent"] == [{"content": {"hello": 1}, "buffers": []}]
    assert r["factory"] == "function", "a module whose default export is a function returning the widget"
    assert "exports no render" in r["refused"]
    assert r["found"] == 5, "widget_manager.get_model finds another model of the page by IPY_MODEL_ id"
    assert r["same"] == [True, True, False, False]


def test_runtime_is_one_self_contained_module_whose_only_request_is_the_pages_state_file():
    src = RUNTIME.read_text()
    assert src.count("fetch(") == 1 and "XMLHttpRequest" not in src and "http://" not in src.replace("https?:", "")
    assert "new URL(tag.dataset.url, doc.baseURI)" in src, "the state file is named relative to the page"
    assert "import(" in src, "widgets are loaded by importing their own module"
    assert not [line for line in src.splitlines() if line.startswith("import ")], "no static imports"
    assert len(src.encode()) < 13_000, "the runtime stays small: the widgets carry their own code"


# ------------------------------------------------------------------------ in a page, in Chromium
COUNTER = """
export default {
  initialize({ model }) { model.set("initialized", (model.get("initialized") || 0) + 1); },
  render({ model, el }) {
    const b = document.createElement("button");
    b.className = "counter";
    const show = () => { b.textContent = String(model.get("count")); };
    b.addEventListener("click", () => { model.set("count", model.get("count") + 1); model.save_changes(); });
    model.on("change:count", show);
    show();
    el.append(b);
    return () => model.off("change:count", show);
  },
};
"""
BROKEN = "export default { render() { throw new Error('broken on purpose'); } };"


def _page() -> str:
    state = {"version_major": 2, "version_minor": 0, "state": {
        "counter": {"model_module": "anywidget", "model_name": "AnyModel",
                    "state": {"_esm": COUNTER, "_css": ".counter { color: rgb(1, 2, 3); }", "count": 5,
                              "_anywidget_id": "test.Counter", "layout": "IPY_MODEL_layout"}},
        "layout": {"model_module": "@jupyter-widgets/base", "model_name": "LayoutModel", "state": {"width": None}},
        "broken": {"model_module": "anywidget", "model_name": "AnyModel",
                   "state": {"_esm": BROKEN, "_css": "", "_anywidget_id": "test.Broken"}},
    }}
    view = '<div class="out"><script type="application/vnd.jupyter.widget-view+json">{"model_id": "%s"}</script></div>'
    return (f'<!doctype html><html><head><meta charset="utf-8"><script type="application/vnd.jupyter.widget-state+json">'
            f'{json.dumps(state)}</script><script type="module" src="/runtime.js"></script></head><body>'
            + "".join(view % m for m in ["counter", "layout", "broken", "counter"]) + "</body></html>")


def test_page_views_share_a_model_and_a_failing_widget_leaves_the_others_drawn(browser):
    runtime = RUNTIME.read_text()
    context = browser.new_context()
    page = context.new_page()
    errors, offhost = [], []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

    def serve(route):
        url = route.request.url
        if url == "http://attn.test/page.html":
            route.fulfill(body=_page(), content_type="text/html")
        elif url == "http://attn.test/runtime.js":
            route.fulfill(body=runtime, content_type="text/javascript")
        else:
            offhost.append(url)
            route.abort()

    page.route("http://**/*", serve)
    try:
        page.goto("http://attn.test/page.html")
        page.wait_for_function("() => window.attnWidgets !== undefined", timeout=10000)
        buttons = page.locator("button.counter")
        assert buttons.count() == 2
        assert buttons.all_text_contents() == ["5", "5"]
        buttons.first.click()
        assert buttons.all_text_contents() == ["6", "6"], "two views of one model stay in step"
        assert page.evaluate("window.attnWidgets.models.get('counter').get('initialized')") == 1, "initialize once per model"
        assert page.evaluate("window.attnWidgets.models.get('counter').saves") == [["initialized", "count"]]
        assert buttons.first.evaluate("b => getComputedStyle(b).color") == "rgb(1, 2, 3)", "the widget's _css is applied"
        assert page.locator("style").count() == 1, "one style sheet per distinct _css"
        assert page.locator(".attn-widget-view").count() == 3, "the LayoutModel view is not drawn"
        broken = page.locator(".attn-widget-view[data-model-id=broken]")
        assert "could not be shown" in broken.inner_text()
        assert len(errors) == 1 and "test.Broken" in errors[0], errors
        assert offhost == []
    finally:
        context.close()


def _state() -> dict:
    return {"version_major": 2, "version_minor": 0, "state": {
        m: {"model_module": "anywidget", "model_name": "AnyModel",
            "state": {"_esm": COUNTER, "_css": "", "count": n, "_anywidget_id": "test.Counter"}}
        for m, n in (("top", 1), ("bottom", 2))}}


def _state_page() -> str:
    """A page as the site's build leaves it: an empty state tag naming a file, one view at the top and
    one below two screens of text."""
    view = '<div class="out"><script type="application/vnd.jupyter.widget-view+json">{"model_id": "%s"}</script></div>'
    return ('<!doctype html><html><head><meta charset="utf-8"><script type="application/vnd.jupyter.widget-state+json" '
            'data-url="../_static/widget-state/book-page-0123.json"></script><script type="module" src="/runtime.js">'
            '</script></head><body>' + view % "top" + '<p style="height: 3000px">text</p>' + view % "bottom"
            + "</body></html>")


def _open_state_page(browser, *, idle: bool, state_status: int = 200):
    """(context, page, requests, errors): _state_page served at /book/page.html; its state file with
    state_status; requestIdleCallback never calls back unless ``idle``."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    requests, errors = [], []
    page.on("console", lambda m: m.type in ("error", "warning") and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    if not idle:
        page.add_init_script("window.requestIdleCallback = () => 0;")
    files = {"http://attn.test/book/page.html": (_state_page(), "text/html"),
             "http://attn.test/runtime.js": (RUNTIME.read_text(), "text/javascript"),
             "http://attn.test/_static/widget-state/book-page-0123.json": (json.dumps(_state()), "application/json")}

    def serve(route):
        url = route.request.url
        requests.append(url)
        if url.endswith(".json") and state_status != 200:
            route.fulfill(status=state_status, body="not found")
        elif url in files:
            route.fulfill(body=files[url][0], content_type=files[url][1])
        else:
            route.abort()

    page.route("**/*", serve)
    page.goto("http://attn.test/book/page.html")
    return context, page, requests, errors


def test_a_state_file_of_the_site_is_fetched_and_each_view_drawn_as_it_nears_the_screen(browser):
    context, page, requests, errors = _open_state_page(browser, idle=False)
    try:
        page.wait_for_selector("button.counter", timeout=10000)
        page.wait_for_timeout(500)
        assert page.locator("button.counter").all_text_contents() == ["1"], "the view two screens down waits"
        page.mouse.wheel(0, 3000)
        page.wait_for_function("() => window.attnWidgets !== undefined", timeout=10000)
        assert page.locator("button.counter").all_text_contents() == ["1", "2"], "drawn once scrolled to"
        saved = {m: v["state"]["count"] for m, v in _state()["state"].items()}
        assert page.evaluate("[...window.attnWidgets.models].map(([id, m]) => [id, m.get('count')])") == [list(i) for i in saved.items()]
        assert requests.count("http://attn.test/_static/widget-state/book-page-0123.json") == 1, requests
        assert all(u.startswith("http://attn.test/") for u in requests) and errors == []
    finally:
        context.close()
    # the browser idle once the page has loaded: the view below is drawn without scrolling
    context, page, requests, errors = _open_state_page(browser, idle=True)
    try:
        page.wait_for_function("() => window.attnWidgets !== undefined", timeout=10000)
        assert page.locator("button.counter").all_text_contents() == ["1", "2"] and errors == []
    finally:
        context.close()


def test_a_missing_state_file_is_reported_once_by_its_address_and_in_each_view(browser):
    context, page, requests, errors = _open_state_page(browser, idle=True, state_status=404)
    try:
        page.wait_for_function("() => window.attnWidgets !== undefined", timeout=10000)
        assert page.locator(".attn-widget-view").all_text_contents() == [
            "This explorer could not be shown here; run the notebook to use it."] * 2
        ours = [e for e in errors if not e.startswith("Failed to load resource")]  # (Chromium's own line for the 404)
        assert len(ours) == 1 and "book-page-0123.json answered HTTP 404" in ours[0], errors
    finally:
        context.close()


# ------------------------------------------------------------------------ the icon fonts served
def test_every_icon_the_pages_use_has_its_glyph_in_the_cut_down_icon_fonts(built_site):
    """scripts/assets.py serves Font Awesome cut down to the icons in use (274 kB -> ~6 kB a page):
    an icon class in a built page whose glyph was left out would show an empty box."""
    import sys

    from fontTools.ttLib import TTFont

    sys.path.insert(0, str(ROOT))
    from scripts.assets import FA_FONTS, ICON_CLASS, icon_table, theme_static

    table = icon_table((theme_static() / "styles" / "pydata-sphinx-theme.css").read_text())
    fonts = built_site / "_static" / "vendor" / "fontawesome" / "webfonts"
    glyphs = set()
    for name in FA_FONTS:
        woff2, ttf = fonts / name, (fonts / name).with_suffix(".ttf")  # the .ttf: the style sheet's fallback
        assert woff2.stat().st_size < 10_000 and ttf.stat().st_size < 20_000, f"{name} is not the cut-down font"
        assert set(TTFont(woff2).getBestCmap()) == set(TTFont(ttf).getBestCmap())
        glyphs |= set(TTFont(woff2).getBestCmap())
    used = set()
    for page in built_site.rglob("*.html"):
        used |= {n for n in ICON_CLASS.findall(page.read_text()) if n in table}
    assert {"fa-bars", "fa-github", "fa-magnifying-glass"} <= used
    missing = sorted(n for n in used if table[n] not in glyphs)
    assert missing == [], f"icons used in the pages but left out of the fonts: {missing}"
