"""The built site in a real browser (Debian Chromium via Playwright), served on 127.0.0.1.

Every request to another host is aborted and recorded: an accidental CDN dependency fails here.
The explorers must render and respond with no kernel; the MaskExplorer's grid must equal
attn.masks; tokens that look like HTML must stay text.
"""

import io
import json
import pathlib
import re

import pytest
import torch

from attn import masks
from attn.book.widgets import MaskExplorer

def _errors(watch):
    """Every page error and console error, with no exception for "known noise"."""
    return list(watch.errors)


def _redirects(html: str) -> bool:
    """Whether a built page only sends the reader on (index.html -> the first chapter: a refresh tag)."""
    return 'http-equiv="refresh"' in html.lower()


def _site_pages(built_site, lang: str = "en", every: bool = False):
    """The pages of one edition of the site: English at the root, Chinese ("zh") under zh/; the index and the
    search page too with ``every``."""
    return sorted(str(p.relative_to(built_site)) for p in built_site.rglob("*.html")
                  if "_static" not in p.parts and (every or p.name not in {"genindex.html", "search.html"})
                  and (p.relative_to(built_site).parts[0] == "zh") == (lang == "zh"))


def test_widget_runtime_is_requested_only_on_pages_with_widgets(watch):
    watch.goto("index.html")
    watch.goto("book/intro.html")
    assert not any("widgets/" in u for u in watch.requests)
    watch.goto("book/explorers.html")
    assert any("/_static/widgets/runtime.js" in u for u in watch.requests)


def test_equations_arrive_typeset_and_draw_with_the_sites_own_fonts(watch):
    page = watch.goto("book/self_attention.html")
    assert page.locator("mjx-container").count() > 10
    assert any("/_static/mathjax/woff-v2/" in u for u in watch.requests)
    assert not any(u.endswith(".js") and "mathjax" in u.lower() for u in watch.requests), "no MathJax runtime"


# --- MaskExplorer ---------------------------------------------------------------------------------

def _mask_page(watch, path="book/explorers.html"):
    page = watch.goto(path)
    page.wait_for_selector(".attn-mask-explorer .attn-mask-grid [data-allowed]", timeout=20000)
    return page, page.locator(".attn-mask-explorer").first


@pytest.fixture(scope="module")
def explorers(browser, site_server):
    """The explorers page, loaded once for the tests that set the controls they check and read back
    (the six mask kinds) or only look (the screenshots); page errors are collected over all of them."""
    from conftest import PageWatch

    w = PageWatch(browser, site_server)
    _mask_page(w)
    yield w
    w.close()


def _grid(root) -> torch.Tensor:
    L, S = int(root.get_attribute("data-l")), int(root.get_attribute("data-s"))
    cells = root.locator(".attn-mask-grid [data-allowed]").evaluate_all(
        "cs => cs.map(c => [+c.dataset.q, +c.dataset.k, c.dataset.allowed === '1'])")
    grid = torch.zeros(L, S, dtype=torch.bool)
    assert len(cells) == L * S
    for q, k, a in cells:
        grid[q, k] = a
    return grid


def _set_range(root, name: str, value: int) -> None:
    root.locator(f"input[name={name}]").evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true}));"
        " el.dispatchEvent(new Event('change', {bubbles: true})); }", value)


def _controls(root) -> dict:
    """The explorer's current settings, read back from its controls, as MaskExplorer arguments."""
    kind = root.locator("select[name=kind]").input_value()
    num = lambda name: int(root.locator(f"input[name={name}]").input_value())  # noqa: E731
    L, S = int(root.get_attribute("data-l")), int(root.get_attribute("data-s"))
    kw = dict(kind=kind, L=L, S=S if kind not in ("prefix_lm",) else None, seed=num("seed"))
    for name in ("window", "dilation", "num_random", "prefix"):
        if root.locator(f"input[name={name}]").count():
            kw[name] = num(name)
    if root.locator("input[name=global_tokens]").count():
        text = root.locator("input[name=global_tokens]").input_value()
        kw["global_tokens"] = [int(t) for t in re.findall(r"\d+", text)]
    return kw


# Each kind with its own length, so that every test changes the shared page's kind and length.
KINDS = {"causal": 9, "sliding_window": 10, "dilated": 11, "local_global": 12, "bigbird": 13, "prefix_lm": 14}


@pytest.mark.parametrize("kind", list(KINDS))
def test_mask_explorer_grid_equals_attn_masks_after_using_its_controls(explorers, kind):
    root = explorers.page.locator(".attn-mask-explorer").first
    root.locator("select[name=kind]").select_option(kind)
    assert root.get_attribute("data-kind") == kind
    _set_range(root, "L", KINDS[kind])
    assert root.get_attribute("data-l") == str(KINDS[kind])
    kw = _controls(root)
    expected = MaskExplorer(**{k: v for k, v in kw.items() if k != "kind"} | {"kind": kind}).mask()
    assert torch.equal(_grid(root), expected), kw
    assert float(root.get_attribute("data-density")) == pytest.approx(expected.float().mean().item(), abs=1e-3)
    assert _errors(explorers) == [] and explorers.offhost == []


def test_mask_explorer_in_the_chapter_matches_causal_plus_padding_and_marks_empty_rows(watch):
    page, root = _mask_page(watch, "book/self_attention.html")
    expected = masks.combine(masks.causal(8), masks.padding([8, 5], 8))[1]
    assert torch.equal(_grid(root), expected)
    _set_range(root, "length", 0)  # the shown sequence has no real token: every row is fully masked
    assert root.get_attribute("data-empty-rows") == ",".join(str(i) for i in range(8))
    weights = root.locator(".attn-weights-grid [data-weight]").evaluate_all("cs => cs.map(c => c.dataset.weight)")
    assert weights and all(float(w) == 0.0 for w in weights), "fully masked rows give zeros, never NaN"


def test_mask_explorer_controls_work_from_the_keyboard(watch):
    page, root = _mask_page(watch)
    L = int(root.get_attribute("data-l"))
    root.locator("input[name=L]").focus()
    page.keyboard.press("ArrowLeft")
    assert int(root.get_attribute("data-l")) == L - 1
    assert root.locator("label[data-control] select[name=kind]").count() == 1


# --- AttentionExplorer ------------------------------------------------------------------------------

HOSTILE_TOKENS = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "</SCRIPT>", "<!--", "&amp;",
                  "a < b && c", "</script >", "end"]


STATE_REF = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json" data-url="([^"]+)"></script>')


def saved_widget_state(built_site, path: str) -> tuple[str, dict]:
    """(the state file's path in the site, its JSON) of a built page with widgets: the build moves each
    page's saved widget state out of its HTML into a file of the site (_ext/attn_widget_state.py)."""
    page = built_site / path
    m = STATE_REF.search(page.read_text())
    assert m, f"{path}: no widget state tag naming a file"
    file = (page.parent / m.group(1)).resolve()
    return file.relative_to(built_site.resolve()).as_posix(), json.loads(file.read_text())


def _page_showing_tokens(built_site, tokens) -> str:
    """The state file of the explorers page, rewritten so that its AttentionExplorer shows ``tokens``, as
    the build writes it (JSON, then _ext/attn_book.py's sanitize_script_content), so the tokens take the
    same path into the page as a chapter's would. Returns (the state file's path, its text): the test
    serves it from memory in place of the built one (which the passes over every page read meanwhile)."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "_ext"))
    from attn_book import sanitize_script_content

    from attn.book.widgets import AttentionExplorer

    path, state = saved_widget_state(built_site, "book/explorers.html")
    [model] = [v["state"] for v in state["state"].values() if v["state"].get("_anywidget_id", "").endswith("AttentionExplorer")]
    n, H = len(tokens), model["weights"]["shape"][1]
    view = AttentionExplorer(tokens, torch.softmax(torch.randn(1, H, n, n), -1))
    model.update(tokens=view.tokens, key_tokens=view.key_tokens, weights=view.weights, query=-1)
    return path, sanitize_script_content(json.dumps(state))


def test_tokens_that_look_like_html_are_shown_as_text_and_never_run(built_site, watch):
    state_path, state = _page_showing_tokens(built_site, HOSTILE_TOKENS)
    watch.page.route(f"{watch.base}/{state_path}", lambda r: r.fulfill(body=state, content_type="application/json"))
    page = watch.goto("book/explorers.html")
    page.wait_for_selector(".attn-head-view .attn-tok", timeout=20000)
    view = page.locator(".attn-head-view").first
    titles = view.locator(".attn-tok title").evaluate_all("ts => ts.map(t => t.textContent)")
    assert titles == [f"query {i}: {t}" for i, t in enumerate(HOSTILE_TOKENS)]
    assert view.locator("img, script").count() == 0
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    assert not any(e.startswith("dialog") for e in watch.errors), "a token was executed"
    assert _errors(watch) == []


def test_attention_explorer_heads_view_and_hover_respond_without_a_kernel(watch):
    page = watch.goto("book/explorers.html")
    page.wait_for_selector(".attn-head-view line.attn-line", timeout=20000, state="attached")
    view = page.locator(".attn-head-view").first
    heads = view.get_attribute("data-heads")
    view.locator("button[name=head][value='1']").click()
    assert view.get_attribute("data-heads") != heads
    view.locator("g.attn-tok[data-q='2']").hover()
    assert view.get_attribute("data-highlight") == "2"
    view.locator("button[name=view][value=heatmap]").click()
    assert view.get_attribute("data-view") == "heatmap"
    assert view.locator("rect.attn-cell").count() > 0


def test_attention_explorer_exports_svg(watch):
    page = watch.goto("book/explorers.html")
    page.wait_for_selector(".attn-head-view .attn-tok", timeout=20000)
    with page.expect_download() as dl:
        page.locator(".attn-head-view button[name=export][value=svg]").first.click()
    text = pathlib.Path(dl.value.path()).read_text(encoding="utf-8")
    assert text.lstrip().startswith("<svg") or "<svg" in text[:300]
    assert "&lt;b&gt;" in text and "<b>" not in text  # the token <b> of the page's example, as text


# --- PositionalEncodingExplorer -----------------------------------------------------------------------

def test_positional_explorer_point_follows_the_position_slider(watch):
    page = watch.goto("book/explorers.html")
    page.wait_for_selector(".attn-pe-explorer circle.attn-pe-point", timeout=20000)
    root = page.locator(".attn-pe-explorer").first
    point = root.locator("circle.attn-pe-point")
    before = (point.get_attribute("data-x"), point.get_attribute("data-y"))
    _set_range(root, "position", 5)
    assert root.get_attribute("data-position") == "5"
    after = (point.get_attribute("data-x"), point.get_attribute("data-y"))
    assert after != before
    pair = int(root.get_attribute("data-pair"))
    angle = 5 / 10000 ** (2 * pair / int(root.get_attribute("data-d-model")))
    x, y = float(after[0]), float(after[1])
    assert (x, y) == pytest.approx((torch.tensor(angle).sin().item(), torch.tensor(angle).cos().item()), abs=1e-3) \
        or (y, x) == pytest.approx((torch.tensor(angle).sin().item(), torch.tensor(angle).cos().item()), abs=1e-3)


def test_positional_explorer_play_moves_the_position_and_its_button_says_what_a_press_does(watch):
    page = watch.goto("book/explorers.html")
    page.wait_for_selector(".attn-pe-explorer circle.attn-pe-point", timeout=20000)
    root = page.locator(".attn-pe-explorer").first
    play = root.locator("button[name=play]")
    start = root.get_attribute("data-position")
    play.click()
    assert root.get_by_role("button", name="\u275a\u275a pause", exact=True).count() == 1
    page.wait_for_function(f"document.querySelector('.attn-pe-explorer').dataset.position !== '{start}'")
    play.click()
    assert root.get_by_role("button", name="\u25b6 play", exact=True).count() == 1
    assert play.get_attribute("aria-pressed") is None  # named by what a press does, not also a pressed toggle


# --- pictures and budgets -------------------------------------------------------------------------

@pytest.mark.parametrize("selector", [".attn-mask-explorer", ".attn-head-view", ".attn-pe-explorer"])
def test_explorer_screenshots_are_not_blank(explorers, selector):
    from PIL import Image

    page = explorers.page
    page.wait_for_selector(selector, timeout=20000)
    root = page.locator(selector).first
    root.scroll_into_view_if_needed()
    # A clip of the page where the explorer is, not Locator.screenshot: that waits for the element to
    # hold still over two animation frames, which timed out in CI while the machine was loaded.
    png = page.screenshot(clip=root.bounding_box())
    img = Image.open(io.BytesIO(png)).convert("L")
    colours = img.getcolors(maxcolors=1 << 16) or []
    assert img.width > 300 and img.height > 150
    assert len(colours) > 20, "the widget area is (nearly) a single colour"


def test_saved_widget_state_of_each_explorer_is_under_200_kb(built_site):
    """Each explorer's saved state under 200 kB; one that carries a model to run in the page (the
    trained GPT's 107,264 float16 weights, 282 KiB in base64: attn.book.widgets.model_state) under 365 kB
    (356 kB measured: its front end is 54 kB of JavaScript with its words in both languages, 12 kB of CSS).
    The page as a whole stays within WIDGET_PAGE_BUDGET (below)."""
    found = 0
    for page in built_site.rglob("*.html"):
        if "_static" in page.parts or "application/vnd.jupyter.widget-state+json" not in page.read_text():
            continue
        _, saved = saved_widget_state(built_site, page.relative_to(built_site).as_posix())
        for model in saved["state"].values():
            found += 1
            carries_weights = (model.get("state", {}).get("model") or {}).get("format") == "attn-model/1"
            limit = 365_000 if carries_weights else 200_000
            assert len(json.dumps(model)) < limit, (page.name, model.get("model_name"))
    assert found >= 3


@pytest.mark.parametrize("path", ["book/explorers.html", "zh/book/explorers.html"])
def test_explorers_are_drawn_from_the_sites_state_file_as_a_phone_scrolls_to_them(built_site, browser, site_server, path):
    """No page carries its widget state inline (300 kB of the explorers page's 320 kB gzipped, which a phone
    waited for before painting): it is a file of the site's own edition, fetched once; the explorers below
    the first screen are drawn as they are scrolled to, once the scrolling pauses (here the browser never reports idle time, when
    the runtime draws the rest anyway), from that file's models."""
    from conftest import PageWatch

    edition = built_site / "zh" if path.startswith("zh/") else built_site
    for page in built_site.rglob("*.html"):
        text = page.read_text()
        assert not re.search(r'<script type="application/vnd\.jupyter\.widget-state\+json">', text), page
        if "application/vnd.jupyter.widget-state+json" in text and "_static" not in page.parts:
            saved_widget_state(built_site, page.relative_to(built_site).as_posix())  # its file exists, JSON
    state_path, saved = saved_widget_state(built_site, path)
    assert (built_site / state_path).parent == edition / "_static" / "widget-state"
    html = (built_site / path).read_text()
    assert len(html.encode()) < 120_000, "the page without its state"
    anywidgets = sorted(k for k, v in saved["state"].items() if v["model_module"] == "anywidget")
    views = html.count("application/vnd.jupyter.widget-view+json")

    w = PageWatch(browser, site_server, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    w.page.add_init_script("window.requestIdleCallback = () => 0;")
    try:
        page = w.goto(path)
        page.wait_for_timeout(1000)
        first = page.locator(".attn-w").count()
        assert first < views, f"{first} of {views} explorers drawn before any scrolling"
        for _ in range(60):
            if page.evaluate("window.attnWidgets !== undefined"):
                break
            page.mouse.wheel(0, 700)
            page.wait_for_timeout(400)  # a reader's pause: nothing is drawn while the page scrolls
        assert page.evaluate("window.attnWidgets !== undefined"), "every explorer drawn once scrolled to"
        assert page.locator(".attn-w").count() == views
        assert sorted(page.evaluate("[...window.attnWidgets.models.keys()]")) == anywidgets
        ids = page.evaluate("[...window.attnWidgets.models.values()].map((m) => [m.id, m.get('_anywidget_id')])")
        assert {i: a for i, a in ids} == {k: saved["state"][k]["state"]["_anywidget_id"] for k in anywidgets}
        assert sum(u.endswith(state_path) for u in w.requests) == 1, "the state file, fetched once"
        assert w.errors == [] and w.warnings == [] and w.offhost == [] and w.failed == []
    finally:
        w.close()


# --- the site as a whole ----------------------------------------------------------------------------

# Code cells, listings and outputs whose box scrolls sideways (wider content than the box).
SIDEWAYS = """() => [...document.querySelectorAll('.bd-article pre, .bd-article .cell_output > .output')]
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
  .map((e) => [e.scrollWidth, e.clientWidth, e.textContent.trim().slice(0, 60)])"""
TEXT_PAGE_BUDGET = 1_500_000  # bytes transferred (gzip, as GitHub Pages serves) by a page without widgets
# ... and by a page with explorers, their runtime included (issue 21; it was ~2.1 MB with the generic
# widget bundle, 1.1 MB of it the bundle, its require.js and icon fonts: see src/attn/book/widgets/static_runtime.js)
WIDGET_PAGE_BUDGET = 1_000_000


def test_every_page_loads_only_from_the_site_without_errors_and_within_its_weight_budget(built_site, desktop_walk):
    """The English edition's pages (the Chinese ones: tests/test_zh_site.py, in parallel)."""
    check_loads_at_desktop_width(built_site, desktop_walk("en"), "en")


def test_axe_finds_no_critical_or_serious_fault_on_any_english_page(built_site, desktop_walk):
    from test_accessibility import check_axe

    check_axe(built_site, desktop_walk("en"), "en")


def walk_at_desktop_width(built_site, browser, site_server, lang: str) -> dict[str, dict]:
    """The one pass over every page of one edition at 1366 px wide (the phone's: tests/test_reading_surface.py),
    which records, per page, what the tests of that width check, so that each page loads once for them all:
    the requests it made (``sizes``: bytes on the wire and URL), its console errors and warnings (``errors``,
    ``warnings``), requests to other hosts and failed ones (``offhost``, ``failed``), the code, listings and
    outputs that scroll sideways once every fold is open (``sideways``), axe-core's findings (``axe``,
    tests/test_accessibility.py) and, on a Chinese page a reader reads, its visible text by kind
    (``text``, scripts/zh_english.py).
    One browser context with its cache switched off (each page transfers everything it uses, as on a first
    visit; a fresh context per page cost twice the CPU). Each page is read once its explorers are drawn
    (the runtime draws the views off the screen a while after the load) and its folds opened (folded code and
    output are checked as a reader who opens them sees them)."""
    from conftest import PageWatch
    from scripts import zh_english
    from test_accessibility import VIEWS, axe_findings

    pages = _site_pages(built_site, lang, every=True)
    assert ("zh/" if lang == "zh" else "") + "book/self_attention.html" in pages
    reading = set(zh_english.chinese_pages(built_site)) if lang == "zh" else set()
    w = PageWatch(browser, site_server, viewport={"width": 1366, "height": 900})
    w.context.new_cdp_session(w.page).send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes: list[tuple[int, str]] = []
    # Each request counts for the page that started it: a late font request of the page before
    # (fonts are asked for as the page lays out) must not be charged to the next one.
    started: dict = {}
    current = {"path": None}
    w.page.on("request", lambda r: started.__setitem__(r, current["path"]))
    w.page.on("requestfinished", lambda r: sizes.append((r.sizes()["responseBodySize"], r.url))
              if started.get(r) == current["path"] else None)
    records = {}
    try:
        for path in pages:
            w.page.wait_for_load_state("networkidle")  # the page before has finished its requests
            for got in (sizes, w.errors, w.warnings, w.offhost, w.failed):
                got.clear()
            current["path"] = path
            redirect = _redirects((built_site / path).read_text())
            w.goto(path)
            if not redirect:
                # the explorers have rendered (one .attn-w root per view; one may sit in a folded optional section)
                w.page.wait_for_function(f"document.querySelectorAll('{VIEWS}').length <= document.querySelectorAll('.attn-w').length",
                                         timeout=30000)
            w.open_folds()
            w.page.wait_for_timeout(300)
            record = {"sideways": w.page.evaluate(SIDEWAYS),
                      "axe": None if redirect else axe_findings(w.page, path),
                      "text": w.page.evaluate(zh_english.COLLECT) if path in reading else None}
            w.page.wait_for_load_state("networkidle")
            records[path] = record | {"sizes": list(sizes), "errors": _errors(w), "warnings": list(w.warnings),
                                      "offhost": list(w.offhost), "failed": list(w.failed)}
    finally:
        w.close()
    return records


def check_loads_at_desktop_width(built_site, records: dict[str, dict], lang: str) -> None:
    """Of every page of the walk above but the search and index pages: no request to another host, no failed
    request, no page error, no console error or warning; no code, listing or output that scrolls sideways; no
    MathJax script, its fonts only where the page has maths, the widget runtime iff it has widgets; every page
    within its budget of bytes on the wire (with widgets: runtime, widget state, maths and figures included)."""
    pages = _site_pages(built_site, lang)
    assert set(pages) <= set(records), sorted(set(pages) - set(records))
    rows = []
    for path in pages:
        _check_page_at_desktop_width(path, (built_site / path).read_text(), records[path], rows)
    print("\npage weights (transferred, gzip):\n" + "\n".join(rows))


def _check_page_at_desktop_width(path: str, html: str, record: dict, rows: list) -> None:
    """The checks of one page of the desktop pass (above); adds its weight to ``rows``."""
    sideways, sizes = record["sideways"], record["sizes"]
    assert sideways == [], f"{path}: code or output that scrolls sideways at 1366 px (scroll, box, text): {sideways}"
    assert record["errors"] == [], (path, record["errors"])
    assert record["warnings"] == [], f"{path}: console warnings (the strict rule: none on any page): {record['warnings']}"
    assert record["offhost"] == [], f"{path}: requests to other hosts: {record['offhost']}"
    assert record["failed"] == [], f"{path}: failed requests: {record['failed']}"
    if _redirects(html):
        return  # the target page is measured itself
    total, urls = sum(s for s, _ in sizes), [u for _, u in sizes]
    has_widgets = "application/vnd.jupyter.widget-state+json" in html
    has_maths = 'class="math' in html
    rows.append(f"{path:42s} {total / 1e6:5.2f} MB  widgets={has_widgets!s:5} maths={has_maths}")
    # the maths arrive typeset: no page runs MathJax, and only a page with maths loads its fonts
    assert not any("/mathjax/" in u and u.endswith(".js") for u in urls), f"{path}: MathJax's script loaded"
    assert has_maths or not any("/mathjax/" in u for u in urls), f"{path}: maths fonts on a page without maths"
    assert any("/widgets/" in u for u in urls) == has_widgets, f"{path}: widget runtime iff widgets"
    budget = WIDGET_PAGE_BUDGET if has_widgets else TEXT_PAGE_BUDGET
    assert total <= budget, f"{path}: {total / 1e6:.2f} MB transferred, budget {budget / 1e6} MB"


def test_page_watch_records_each_request_to_another_host_and_none_is_answered(watch):
    """The watch every browser test relies on, on a page that asks three other hosts for a style sheet,
    an image and a fetch: each is recorded, and fails (no host name but 127.0.0.1's resolves)."""
    from urllib.parse import urlsplit

    html = ('<html><head><link rel="stylesheet" href="https://cdn.example.org/a.css"></head><body>'
            '<img src="https://images.example.net/a.png" alt="">'
            '<script>fetch("https://api.example.com/x").catch(() => {})</script></body></html>')
    path = "book/offhost-test.html"
    watch.page.route(f"{watch.base}/{path}", lambda r: r.fulfill(body=html, content_type="text/html"))
    failed = []
    watch.page.on("requestfailed", lambda r: failed.append(r.url))
    watch.goto(path)
    assert sorted(urlsplit(u).hostname for u in watch.offhost) == ["api.example.com", "cdn.example.org", "images.example.net"]
    assert sorted(failed) == sorted(watch.offhost), "a request to another host was answered"


def test_missing_pages_get_the_sites_own_404_page_and_the_favicon_exists(watch):
    url = f"{watch.base}/book/no-such-chapter.html"
    response = watch.page.goto(url, wait_until="networkidle")
    assert response.status == 404
    assert "not found" in watch.page.locator("main, body").first.inner_text().lower()
    assert watch.failed == [f"404 {url}"], "only the missing page itself may fail; its styles and scripts load"
    assert len(watch.errors) == 1 and "status of 404" in watch.errors[0], watch.errors
    assert watch.page.locator("link[rel=stylesheet]").count() > 0
    icon = watch.page.request.get(f"{watch.base}/favicon.ico")
    assert icon.status == 200 and icon.body()[:4] == b"\x00\x00\x01\x00", "an .ico file at the site root"
