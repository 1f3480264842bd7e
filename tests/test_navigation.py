"""Navigation at every width (issue 21): a reader can open the chapter list and the page's contents,
follow a link from each and land where it points, on a phone (360 and 390 px), a tablet (820 px)
and a desktop (1366 px); every page has one header and one search control, and it searches.

Built site, Debian Chromium via Playwright, served on 127.0.0.1 as in tests/test_browser.py.
"Shown" means what a reader sees: a box on the screen, not hidden, and the topmost thing at its
centre (so a panel left open over the page, or a page under a panel, does not count as shown).

The relapse this guards against: with sphinx-book-theme 1.3.0 and pydata-sphinx-theme 0.17.1 the
theme's script binds its toggles to the first ``.primary-toggle``/``.secondary-toggle`` in the page,
hidden buttons of a second (empty) header, so the visible ☰ and contents buttons did nothing at
any width (pydata-sphinx-theme issue 2451) and that second header brought a second search box.
"""

import contextlib

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import PageWatch

PAGE = "book/self_attention.html"
CHAPTER = ("Multi-head attention", "book/multi_head_attention.html")  # a link in the chapter list
SECTION = ("Summary", "summary")  # a link in the page's contents, and the id of its section

# width: (height, touch screen). At 1366 px both panels are part of the page; below, they are drawers.
SCREENS = {360: (800, True), 390: (844, True), 820: (1180, True), 1366: (768, False)}
WIDE = 1366

SHOWN = """(e) => {
  const r = e.getBoundingClientRect(), s = getComputedStyle(e);
  if (r.width < 2 || r.height < 2 || s.visibility === 'hidden' || +s.opacity === 0) return false;
  if (r.right <= 0 || r.left >= innerWidth || r.bottom <= 0 || r.top >= innerHeight) return false;
  const x = Math.min(Math.max((r.left + r.right) / 2, 1), innerWidth - 1);
  const y = Math.min(Math.max(r.top + Math.min(r.height / 2, 12), 1), innerHeight - 1);
  const top = document.elementFromPoint(x, y);
  return !!top && (e.contains(top) || top.contains(e));
}"""

# The page's headers (top bars holding its buttons) and search controls, counted as the reader sees
# them: shown, and not inside another one counted.
COUNT_SHOWN = """(selector) => {
  const isShown = %s;
  const all = [...document.querySelectorAll(selector)].filter(
    (e) => isShown(e) && !e.closest('dialog:not([open])'));
  return all.filter((e) => !all.some((o) => o !== e && o.contains(e))).map((e) => e.outerHTML.slice(0, 120));
}""" % SHOWN
HEADERS = "header, [role=banner], .bd-header, .bd-header-article"
SEARCH = "input[type=search], .search-button__button, form.bd-search, [role=search]"


@pytest.fixture
def reader(browser, site_server):
    """Open the book at a given width, as a touch screen below 1366 px; page errors are collected."""
    opened = []

    def open_at(width: int, path: str = PAGE):
        height, touch = SCREENS[width]
        w = PageWatch(browser, site_server, viewport={"width": width, "height": height},
                      is_mobile=touch, has_touch=touch, device_scale_factor=2 if touch else 1)
        opened.append(w)
        w.goto(path)
        w.press = (lambda loc: loc.tap()) if touch else (lambda loc: loc.click())
        return w

    yield open_at
    for w in opened:
        w.close()


def _shown(locator) -> bool:
    return locator.count() > 0 and locator.first.evaluate(SHOWN)


def _what(locator) -> str:
    """Where ``locator`` is and what a reader sees at its centre, for a failure message."""
    return locator.first.evaluate("""(e) => { const r = e.getBoundingClientRect();
      const top = document.elementFromPoint((r.left + r.right) / 2, r.top + Math.min(r.height / 2, 12));
      return `box ${[r.left, r.top, r.width, r.height].map(Math.round)}, on top: ${top && top.outerHTML.slice(0, 100)}`; }""")


def _the_one_shown(page, selector: str):
    """The one button matching ``selector`` a reader can see (exactly one)."""
    hits = [b for b in page.locator(selector).all() if b.evaluate(SHOWN)]
    assert len(hits) == 1, f"{len(hits)} shown {selector} buttons"
    return hits[0]


def _wait_shown(page, locator, shown: bool = True) -> bool:
    """Wait (up to 3 s: drawers slide in, pages scroll smoothly) until ``locator`` is shown or not."""
    with contextlib.suppress(PlaywrightTimeout):  # the caller's assertion says what failed
        page.wait_for_function(f"(e) => ({SHOWN})(e) === {str(shown).lower()}",
                               arg=locator.first.element_handle(), timeout=3000)
    return _shown(locator) == shown


def _follow(w, panel, title: str, url: str) -> None:
    """Press the link called ``title`` in the open ``panel`` and wait until the page is at ``url``."""
    link = panel.get_by_role("link", name=title, exact=True)
    assert _shown(link), f"{title!r} is not shown in the open panel"
    w.press(link)
    w.page.wait_for_url(url, wait_until="domcontentloaded", timeout=20000)


def _no_errors(w):
    assert w.errors == [] and w.offhost == [] and w.failed == [], (w.errors, w.offhost, w.failed)


@pytest.mark.parametrize("width", list(SCREENS))
def test_chapter_list_opens_and_its_link_leads_to_the_chapter(reader, width):
    w = reader(width)
    page = w.page
    chapters = page.locator("nav.bd-docs-nav")
    menu = _the_one_shown(page, ".primary-toggle")
    if width == WIDE:
        assert _wait_shown(page, chapters), f"at 1366 px the chapter list is part of the page: {_what(chapters)}"
        w.press(menu)
        assert _wait_shown(page, chapters, False), "the desktop ☰ does not hide the chapter list"
    else:
        assert not _shown(chapters), "on a narrow screen the chapter list waits behind ☰"
    w.press(menu)
    assert _wait_shown(page, chapters), f"☰ does not open the chapter list at {width} px"

    title, target = CHAPTER
    _follow(w, chapters, title, f"**/{target}")
    assert page.locator("h1").first.inner_text().strip().rstrip("#").strip() == title
    _no_errors(w)


@pytest.mark.parametrize("width", list(SCREENS))
def test_contents_panel_opens_and_its_link_lands_on_the_section(reader, width):
    w = reader(width)
    page = w.page
    contents = page.locator(".bd-sidebar-secondary nav.page-toc")
    if width == WIDE:
        assert _wait_shown(page, contents), f"at 1366 px the page's contents are part of the page: {_what(contents)}"
        assert not [b for b in page.locator(".secondary-toggle").all() if b.evaluate(SHOWN)]
    else:
        assert not _shown(contents), "on a narrow screen the contents wait behind their button"
        w.press(_the_one_shown(page, ".secondary-toggle"))
        assert _wait_shown(page, contents), f"the contents button does not open the contents at {width} px"

    title, anchor = SECTION
    _follow(w, contents, title, f"**/{PAGE}#{anchor}")
    heading = page.locator(f"section#{anchor} > h2")
    assert _wait_shown(page, heading), \
        f"after following {title!r} its heading is not in sight at {width} px: {_what(heading)}"
    assert page.evaluate("[...document.querySelectorAll('dialog')].filter((d) => d.open).length") == 0, \
        "a panel is left open over the section"
    _no_errors(w)


@pytest.mark.parametrize("width", list(SCREENS))
def test_one_header_and_one_search_control_that_searches(reader, width):
    w = reader(width)
    page = w.page
    headers = page.evaluate(COUNT_SHOWN, HEADERS)
    assert len(headers) == 1, f"{len(headers)} headers shown at {width} px: {headers}"
    searches = page.evaluate(COUNT_SHOWN, SEARCH)
    assert len(searches) == 1, f"{len(searches)} search controls shown at {width} px: {searches}"

    w.press(_the_one_shown(page, SEARCH))
    box = page.locator("#pst-search-dialog input[type=search]")
    assert _wait_shown(page, box), "the search control does not open the search box"
    box.fill("softmax")
    box.press("Enter")
    page.wait_for_url("**/search.html?q=softmax*", wait_until="domcontentloaded", timeout=20000)
    page.wait_for_selector("#search-results li a", timeout=20000)
    assert page.locator("#search-results li a").count() > 0
    _no_errors(w)


def test_theme_template_override_is_the_installed_themes_own_less_font_awesome(root):
    """_templates/static/webpack-macros.html replaces pydata-sphinx-theme's own to leave out its 1.5 MB
    Font Awesome script. After a theme upgrade a stale copy would load the old release's asset
    digests and macros: it must be the installed release's file with only that script left out."""
    import pathlib

    import pydata_sphinx_theme

    theme = pathlib.Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    theirs = (theme / "static" / "webpack-macros.html").read_text()
    ours = (root / "_templates" / "static" / "webpack-macros.html").read_text()
    assert f"pydata-sphinx-theme {pydata_sphinx_theme.__version__}'s" in ours, "the copy names another release"
    assert "scripts/fontawesome.js" in theirs and "scripts/fontawesome.js" not in ours

    def macros(text):
        return [line for line in text.split("-->", 1)[1].splitlines() if "fontawesome" not in line]

    assert macros(ours) == macros(theirs)
