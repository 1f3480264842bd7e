"""The book's Sphinx extension for issue 34: print and PDF. Loaded by attn_book.setup.

- ``attn-print.css`` (in ``_css``): a chapter printed from the browser reads as a document (no
  navigation, code wrapped, figures and tables whole, links' addresses shown, once). It is linked with
  ``media="print"``, so the screen never waits for it.
- Optional sections and exercise solutions (``<details>``) are prose: opened before printing and
  closed again after (Chromium opens them from the style sheet alone; other browsers need this).
- The whole book as one PDF per edition, written from the built site by ``scripts/pdf.py`` under the
  name ``PDF_NAME`` at the edition's root, which then links it from the introduction (``pdf_link``).
"""

from __future__ import annotations

import re
from html import escape, unescape

PDF_NAME = {"en": "attention-executed.pdf", "zh": "attention-executed-zh.pdf"}
PDF_LABEL = {"en": "The whole book as one PDF", "zh": "全书 PDF 版"}
PDF_TITLE = {"en": "Download the book (every chapter, with an outline and page numbers)",
             "zh": "下载全书（含全部章节、书签与页码）"}

# Opens the folded prose sections for printing and restores them afterwards (the ones the reader had
# opened stay open); a hidden code cell (details.hide) is not prose and stays as it is.
OPEN_FOR_PRINT = (
    "addEventListener('beforeprint',()=>{document.querySelectorAll('details.attn-deeper:not([open]),"
    "details.sd-dropdown:not([open])').forEach(d=>{d.open=true;d.dataset.attnPrinted=''})});"
    "addEventListener('afterprint',()=>{document.querySelectorAll('details[data-attn-printed]')"
    ".forEach(d=>{d.open=false;delete d.dataset.attnPrinted})});"
)


def pdf_link(lang: str, href: str) -> str:
    """The introduction's link to the book's PDF: put there by scripts/pdf.py once the PDF is written,
    so that the site never links a PDF it lacks."""
    return (f'<p class="attn-pdf"><a href="{escape(href)}" type="application/pdf" download '
            f'title="{escape(PDF_TITLE[lang])}">{escape(PDF_LABEL[lang])}</a></p>\n')


# A link whose text is its own address (a reference's URL): print shows it once, not twice.
URL_AS_TEXT = re.compile(r'<a class="([^"]*\breference external\b[^"]*)" href="(https?://[^"]+)">([^<]+)</a>')


def mark_links_showing_their_url(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001 (html-page-context handler)
    def mark(m: re.Match) -> str:
        classes, href, text = m.groups()
        if unescape(text).strip().rstrip("/") != unescape(href).rstrip("/"):
            return m.group(0)
        return f'<a class="{classes} attn-url-shown" href="{href}">{text}</a>'

    if "body" in context:
        context["body"] = URL_AS_TEXT.sub(mark, context["body"])


def setup(app):
    app.add_css_file("attn-print.css", media="print")
    app.add_js_file(None, body=OPEN_FOR_PRINT)
    app.connect("html-page-context", mark_links_showing_their_url)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
