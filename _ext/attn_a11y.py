"""Accessibility fixes to the written pages (issue 34, item 3: axe-core's WCAG 2.1 A/AA rules, no
critical or serious fault on any page of either edition). Loaded by attn_book.setup.

Each fix changes markup that another package writes, in the written page, at ``build-finished``
(priority 600: after the maths, before SEO and the loading changes). Nothing is hidden:

1. myst-nb's fold of a code cell, ``<summary aria-label="Toggle hidden content">``: the label hides
   the text the reader sees ("Show code cell source"), so a speech user who says what they see is not
   understood (label-content-name-mismatch). Without the label the summary is named by that text (the
   other paragraph, "Hide ...", is display: none while the fold is closed, and the other way round).
2. The references (sphinxcontrib-bibtex through docutils): each entry has the deprecated role
   ``doc-biblioentry`` inside a ``role="list"``, which then owns no list items (aria-required-children,
   critical). The entries become ``listitem``s.
3. The result tables (``table.attn-table``, written by ``attn.book.viz.Table`` and stored in the
   chapters' outputs): a row's first cell names the row, so it becomes a row header (``<th
   scope="row">``), the column headers get ``scope="col"``, and the empty corner cell is a plain
   cell. Done here and not in ``viz.Table``: that would change the stored outputs nbval compares.
4. The explorers' front ends: a saved notebook carries each explorer's ES module and style sheet as
   they were when the chapter was executed (``_esm``, ``_css``); the page's copy is replaced by the
   current files (``attn.book.widgets``), so a fix to an explorer reaches the book without
   re-executing every chapter. Only models whose ``_anywidget_id`` names one of the book's explorers.
5. The theme's toggle of a table-of-contents entry with pages under it (the API reference's), a
   ``<summary>`` holding only an icon (``role="presentation"``), has no name (summary-name, serious):
   it is named after the entry, in the edition's language (TOGGLE_NAME).
6. The themes' names, tooltips and placeholders written in English into their templates (the sidebar
   toggles, the navigation landmarks, the search field) are given in the edition's language where the
   configuration has a table of them (``attn_theme_words``: the Chinese edition; attn_theme_words.py).
   A name in the page's language is read in that language by a screen reader (WCAG 3.1.2).
7. The themes' Font Awesome icons (``<i class="fa-solid fa-angle-left">``) draw a private-use character, which
   Chromium puts into the name of the link or button around them ("\uf104 Previous Why attention"): a screen
   reader reads it as a symbol, or an unknown character. Every such icon is ``aria-hidden`` (each control
   that holds one also has text or a label of its own; axe's link-name and button-name rules, run on every
   page, would find one that does not).

The theme's search field is fixed in its template (``_templates/search-button-field.html``).
"""

from __future__ import annotations

import json
import pathlib
import re
from html import escape, unescape

_SUMMARY = re.compile(r'<summary aria-label="Toggle hidden content">')
_BIBLIOENTRY = re.compile(r'(<div class="citation" id="[^"]*" role=")doc-biblioentry(")')
_TABLE = re.compile(r'<table class="attn-table">.*?</table>', re.S)
_STATE = re.compile(r'(<script type="application/vnd\.jupyter\.widget-state\+json">)(.*?)(</script>)', re.S)
EXPLORERS = "attn.book.widgets."
# the entry's link, then the theme's fold of the pages under it, whose summary holds only the icon
_TOC_TOGGLE = re.compile(r'(<a class="(?:current )?reference internal" href="[^"]*">((?:(?!</a>).)*)</a>\s*<details(?:\s[^>]*)?>\s*)'
                         r'<summary>(?=\s*<span class="toctree-toggle")', re.S)
TOGGLE_NAME = {"en": "Pages of {title}", "zh": "{title}的各页"}


_ICON = re.compile(r'<(i|span) class="(?:fa|fab|fas|far|fa-[a-z-]+)(?: [^"]*)?"(?![^>]*\baria-hidden=)')


def hide_icons(html: str) -> str:
    """Every Font Awesome icon element aria-hidden (see 7. above)."""
    return _ICON.sub(lambda m: m.group(0) + ' aria-hidden="true"', html)


def name_folds_by_their_text(html: str) -> str:
    return _SUMMARY.sub("<summary>", html)


def name_toc_toggles(html: str, lang: str = "en") -> str:
    """Each table-of-contents fold named after its entry (see 5. above)."""
    def named(m: re.Match) -> str:
        title = " ".join(unescape(re.sub(r"<[^>]+>", "", m.group(2))).split())
        return m.group(1) + f'<summary aria-label="{escape(TOGGLE_NAME[lang].format(title=title))}">'

    return _TOC_TOGGLE.sub(named, html)


def list_items_for_citations(html: str) -> str:
    return _BIBLIOENTRY.sub(r"\1listitem\2", html)


def table_headers(table: str) -> str:
    """Row and column headers for one ``table.attn-table`` (see 3. above)."""
    head, sep, body = table.partition("<tbody>")
    head = head.replace("<th></th>", "<td></td>", 1)
    head = re.sub(r"<th(?=[\s>])(?![^>]*\bscope=)", '<th scope="col"', head)  # <th>, not <thead>
    if sep:
        body = re.sub(r"<tr><td([^>]*)>(.*?)</td>", r'<tr><th scope="row"\1>\2</th>', body, flags=re.S)
    return head + sep + body


def current_front_ends(html: str) -> str:
    """The page's saved widget state with each explorer's current module and style sheet (see 4. above)."""
    m = _STATE.search(html)
    if not m:
        return html
    import importlib

    from attn_book import sanitize_script_content

    state = json.loads(m.group(2))
    changed = False
    for model in state.get("state", {}).values():
        traits = model.get("state", {})
        ident = traits.get("_anywidget_id", "")
        if not ident.startswith(EXPLORERS) or "_esm" not in traits:
            continue
        module, _, name = ident.rpartition(".")
        widget = getattr(importlib.import_module(module), name, None)
        if widget is None:
            raise RuntimeError(f"the page's widget state names {ident}, which attn.book.widgets no longer has")
        for trait in ("_esm", "_css"):
            text = getattr(widget, trait, None)  # a str, or anywidget's FileContents (str() is the text)
            text = None if text is None else str(text)
            if text is not None and traits.get(trait) != text:
                traits[trait], changed = text, True
    if not changed:
        return html
    return html[:m.start(2)] + sanitize_script_content(json.dumps(state)) + html[m.end(2):]


def fix_page(html: str, lang: str = "en", words: dict[str, str] | None = None) -> str:
    from attn_theme_words import translate_attributes

    html = translate_attributes(name_toc_toggles(name_folds_by_their_text(html), lang), words)
    html = hide_icons(list_items_for_citations(html))
    if 'class="attn-table"' in html:
        html = _TABLE.sub(lambda m: table_headers(m.group(0)), html)
    return current_front_ends(html)


def fix_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    lang = "zh" if str(app.config.language or "").startswith("zh") else "en"
    words = app.config.attn_theme_words
    for path in pathlib.Path(app.outdir).rglob("*.html"):
        if "_static" in path.parts:
            continue
        html = path.read_text(encoding="utf-8")
        fixed = fix_page(html, lang, words)
        if fixed != html:
            path.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("build-finished", fix_pages, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
