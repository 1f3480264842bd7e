"""The book and its explorers on a phone: a 390 x 844 viewport in Chromium (as tests/test_browser.py).

Nothing may widen the page; every explorer fits the screen or scrolls inside its own container with a
visible cue; every text label lies inside its SVG (bold labels included); the controls still work; no page or
console errors. Checked on the built site's explorers page (its controls used), on explorers rendered alone
with long tokens, a 64-token view and tables given out of alphabetical order, and, for every page of the
site, in the one pass over the site at a phone's width (tests/test_reading_surface.py, with PHONE_CONTEXT
and assert_fits_the_phone from here).
"""

import itertools
import json

import pytest
import torch

import attn
from attn.book.widgets import AttentionExplorer, MaskExplorer, PositionalEncodingExplorer

PHONE = {"width": 390, "height": 844}
# A phone as Playwright emulates one: its screen, 2 device pixels per CSS pixel, a touch screen.
PHONE_CONTEXT = {"viewport": PHONE, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}

# Everything measured in one pass in the page: the page's own overflow, each explorer's box, each SVG text
# label's box against its SVG, each SVG against the screen (or the scrolling container that holds it).
LAYOUT = """() => {
  const vw = window.innerWidth, out = {vw, pageWidth: document.documentElement.scrollWidth, explorers: []};
  const box = (r) => ({left: Math.round(r.left * 10) / 10, right: Math.round(r.right * 10) / 10});
  for (const root of document.querySelectorAll('.attn-w')) {
    const r = root.getBoundingClientRect(), e = {cls: root.className, box: box(r), clipped: [], offscreen: [], controls: []};
    for (const c of root.querySelectorAll('.attn-controls, .attn-info, .attn-legend, .attn-readout')) {
      if (c.scrollWidth > c.clientWidth + 1) e.controls.push(c.className + ' ' + c.scrollWidth + '>' + c.clientWidth);
    }
    for (const svg of root.querySelectorAll('svg')) {
      const s = svg.getBoundingClientRect();
      for (const t of svg.querySelectorAll('text')) {
        const b = t.getBoundingClientRect();
        if (!b.width) continue;
        if (b.left < s.left - 1 || b.right > s.right + 1 || b.top < s.top - 1 || b.bottom > s.bottom + 1) {
          e.clipped.push([t.textContent, Math.round(b.left - s.left), Math.round(s.right - b.right)]);
        }
      }
      if (s.right > vw + 0.5 || s.left < -0.5) {
        let sc = svg.parentElement;
        while (sc && sc !== root && !['auto', 'scroll'].includes(getComputedStyle(sc).overflowX)) sc = sc.parentElement;
        const ok = sc && sc !== root && sc.getBoundingClientRect().right <= vw + 0.5 && sc.scrollWidth > sc.clientWidth;
        const cue = root.querySelector('.attn-scroll-cue');
        const cueShown = !!cue && !cue.hidden && cue.getBoundingClientRect().height > 0 && root.dataset.scrolls === 'true';
        if (!(ok && cueShown)) e.offscreen.push([svg.getAttribute('class'), box(s), !!ok, cueShown]);
      }
    }
    out.explorers.push(e);
  }
  return out;
}"""


def assert_fits_the_phone(page, *, expect_explorers: int = 1) -> dict:
    lay = page.evaluate(LAYOUT)
    assert lay["vw"] == 390
    assert lay["pageWidth"] <= 390, f"the page is {lay['pageWidth']} px wide on a 390 px screen"
    assert len(lay["explorers"]) >= expect_explorers
    for e in lay["explorers"]:
        assert e["box"]["left"] >= -0.5 and e["box"]["right"] <= 390.5, e
        assert e["clipped"] == [], f"{e['cls']}: text outside its SVG (text, px left, px right): {e['clipped']}"
        assert e["offscreen"] == [], f"{e['cls']}: a figure runs off the screen without a visible scroll cue"
        assert e["controls"] == [], f"{e['cls']}: controls or legends cut off: {e['controls']}"
    return lay


# --------------------------------------------------------------------------- the built site on a phone
# Every page at 390 px (no widening, explorers that fit, tables, console) is checked in the one pass over
# the site in tests/test_reading_surface.py; here, the explorers page with its controls in use.
@pytest.fixture
def phone(browser, site_server):
    from conftest import PageWatch

    w = PageWatch(browser, site_server, **PHONE_CONTEXT)
    yield w
    w.close()


def test_explorers_page_fits_a_phone_and_its_controls_work(phone):
    page = phone.goto("book/explorers.html")
    for sel in (".attn-mask-explorer .attn-mask-grid [data-allowed]", ".attn-head-view .attn-tok", ".attn-pe-explorer circle.attn-pe-point"):
        page.wait_for_selector(sel, timeout=20000)
    assert_fits_the_phone(page, expect_explorers=3)

    view = page.locator(".attn-head-view").first
    view.locator("g.attn-tok[data-q='2']").tap()  # pin a query: its label turns bold and must still fit
    assert view.get_attribute("data-query") == "2"
    heads = view.get_attribute("data-heads")
    view.locator("button[name=head][value='1']").tap()
    assert view.get_attribute("data-heads") != heads
    assert_fits_the_phone(page, expect_explorers=3)
    view.locator("button[name=view][value=heatmap]").tap()
    assert view.get_attribute("data-view") == "heatmap"
    assert_fits_the_phone(page, expect_explorers=3)

    mask = page.locator(".attn-mask-explorer").first
    mask.locator("select[name=kind]").select_option("causal")
    assert mask.get_attribute("data-kind") == "causal"
    pe = page.locator(".attn-pe-explorer").first
    pe.locator("input[name=position]").fill("9")
    assert pe.get_attribute("data-position") == "9"
    assert_fits_the_phone(page, expect_explorers=3)
    assert phone.errors == [] and phone.offhost == []


# --------------------------------------------------------------------------- explorers alone, harder data
def phone_show(browser, *widgets, sort_keys: bool = False):
    """Render widgets on a blank phone-sized page (the harness of test_widgets_js, a stand-in for the widget
    manager). ``sort_keys``: the state goes through JSON with sorted keys, as a saved notebook stores it."""
    from test_widgets_js import HARNESS

    items = []
    for w in widgets:
        st = w.get_state()
        if sort_keys:
            st = json.loads(json.dumps(st, sort_keys=True))
        items.append({"esm": st.pop("_esm"), "css": st.pop("_css"), "state": {k: v for k, v in st.items() if not k.startswith("_")}})
    page = browser.new_page(viewport=PHONE, accept_downloads=True)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.route("**/*", lambda route: (page.errors.append("request " + route.request.url), route.abort()))
    page.set_content(HARNESS % json.dumps(items).replace("</", "<\\/"))
    page.wait_for_function("window.ready === true", timeout=10_000)
    return page


LONG = ["<s>", "Extraordinarily", "long-windedness", "W" * 30, "of", "tokenisation", "a < b && c", "end"]


def weights(*shape, seed=0):
    return torch.softmax(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), -1)


@pytest.mark.parametrize("view", ["lines", "heatmap"])
def test_long_and_bold_labels_stay_inside_the_figure_on_a_phone(browser, view):
    page = phone_show(browser, AttentionExplorer(LONG, weights(2, 8, 8, 8), view=view))
    try:
        assert_fits_the_phone(page)
        for q in range(len(LONG)):  # each query in turn highlighted (bold), then pinned
            page.evaluate(f"window.models[0].set('query', {q})")
            assert_fits_the_phone(page)
        assert page.errors == []
    finally:
        page.close()


def test_a_64_token_view_scrolls_inside_the_explorer_with_a_visible_cue(browser):
    tokens = [f"position-{i}" for i in range(64)]
    page = phone_show(browser, AttentionExplorer(tokens, weights(1, 4, 64, 64), view="heatmap"))
    try:
        root = page.locator(".attn-head-view")
        assert root.get_attribute("data-scrolls") == "true"
        assert page.locator(".attn-scroll-cue").is_visible()
        assert page.evaluate("getComputedStyle(document.querySelector('.attn-figure')).overflowX") == "auto"
        assert_fits_the_phone(page)
        page.evaluate("window.models[0].set('view', 'lines')")  # 64 rows of short tokens fit the width again
        assert root.get_attribute("data-scrolls") == "false" and not page.locator(".attn-scroll-cue").is_visible()
        assert_fits_the_phone(page)
        assert page.errors == []
    finally:
        page.close()


def test_mask_and_positional_explorers_fit_a_phone_and_list_tables_in_the_order_given(browser):
    tables = {"sinusoidal": attn.positional.sinusoidal_table(64, 32), "learned": 0.3 * torch.randn(64, 32),
              "ALiBi-free": attn.positional.sinusoidal_table(64, 32, base=100.0)}
    pe = PositionalEncodingExplorer(encodings=tables)
    page = phone_show(browser, MaskExplorer("bigbird", 16), pe, sort_keys=True)
    try:
        options = page.eval_on_selector_all(".attn-pe-explorer select[name=encoding] option", "os => os.map(o => o.value)")
        assert options == list(tables), "tables listed as given, not alphabetically"
        assert_fits_the_phone(page, expect_explorers=2)
        page.select_option(".attn-pe-explorer select[name=encoding]", "learned")
        for p in (0, 20, 63):
            page.fill(".attn-pe-explorer input[name=position]", str(p))
            ticks = page.eval_on_selector_all(".attn-pe-similarity .attn-pe-ytick", "ts => ts.map(t => t.getBBox())"
                                                                                  ".map(b => [b.y, b.y + b.height])")
            ticks.sort()
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(ticks)), f"axis labels overlap: {ticks}"
            assert_fits_the_phone(page, expect_explorers=2)
        assert page.errors == []
    finally:
        page.close()


def test_a_wide_positional_table_still_fits_a_phone(browser):
    page = phone_show(browser, PositionalEncodingExplorer(max_len=96, d_model=512))
    try:
        assert_fits_the_phone(page)
        assert page.locator(".attn-pe-cell").count() == 96 * 512
        assert page.errors == []
    finally:
        page.close()
