"""Print and PDF (issue 34): a chapter printed from the browser reads as a document (attn-print.css),
and `make pdf` (scripts/pdf.py) writes one PDF per edition of the whole book, with an outline of
every chapter, page numbers and links that stay inside it. `make pdf` checks each book it prints
(pdf.check); here a short book of each edition is printed the same way, read back, and the check is
shown to fail on what it must catch."""

from __future__ import annotations

import pathlib
import re

import pytest
from bs4 import BeautifulSoup

from scripts import pdf

EDITIONS = {"en": "", "zh": "zh"}
# The short book make test prints of each edition: the introduction (where the site offers the whole book),
# a chapter with maths, figures and code (its title and formula are read back), the explorers (printed as a
# pointer to the site), the references (links out of the book). Printing the whole book (about 490 pages an
# edition) is `make pdf`'s, which checks each PDF it writes with the same pdf.check (CI: make book).
SAMPLE = ("book/intro", pdf.KNOWN_PAGE, "book/explorers", "book/references")


def _pypdf():
    try:
        import pypdf
    except ImportError:
        pytest.fail("pypdf is missing from .venv: run make setup (requirements.txt pins it)")
    return pypdf


@pytest.fixture(scope="module")
def short_books(built_site) -> dict[str, dict]:
    """Each edition's short book (SAMPLE), printed and checked by pdf.build as `make pdf` prints the whole
    book, outside the site (which offers only the whole book's PDF)."""
    _pypdf()
    folder = built_site.parent / "short-books"
    folder.mkdir(exist_ok=True)
    books = {}  # in processes of their own, as make pdf prints (this worker's Playwright may be running)
    for r in pdf.build(built_site.parents[1], tuple(EDITIONS), only=SAMPLE, out_dir=folder):
        print(f"{r['edition']}: {r['pages']} pages, {r['bytes'] / 1e6:.1f} MB, printed in {r['seconds']} s")
        books[r["edition"]] = r
    return books


def _chapters(built_site: pathlib.Path, lang: str) -> list[tuple[str, str]]:
    """(page name, title) of the short book's chapters, read from the built pages' headings."""
    chapters = []
    for _, names in pdf.book_order(pdf.EDITIONS[lang][0], SAMPLE):
        for name in names:
            html = (built_site / EDITIONS[lang] / f"{name}.html").read_text(encoding="utf-8")
            h1 = BeautifulSoup(html, "html.parser").select_one("article.bd-article h1")
            chapters.append((name, " ".join(h1.get_text(" ", strip=True).rstrip("#").split())))
    return chapters


@pytest.mark.parametrize("lang", EDITIONS)
def test_a_short_book_prints_with_its_outline_page_numbers_links_and_text(short_books, built_site, lang):
    """The short book passed pdf.check when printed; read back here: each chapter of it in the outline in
    order, and the self-attention chapter's heading and formula as text."""
    pypdf = _pypdf()
    book = short_books[lang]
    reader = pypdf.PdfReader(book["path"])
    chapters = _chapters(built_site, lang)
    assert len(chapters) == len(SAMPLE) and book["pages"] == len(reader.pages) >= 5 * len(SAMPLE)
    titles = [re.sub(r"\s+", "", t) for _, t in chapters]
    marks = [(re.sub(r"\s+", "", title), page) for depth, title, page in pdf.outline(reader) if depth == 1]
    assert [t for t, _ in marks if t in titles] == titles, marks  # beside the parts' and the contents'
    first = dict(marks)[titles[1]]  # the self-attention chapter's first page
    text = " ".join(" ".join(page.extract_text() for page in reader.pages[first:first + 12]).split())
    assert chapters[1][0] == pdf.KNOWN_PAGE and all(words in text for words in pdf.KNOWN_TEXT[lang]), text[:500]
    assert book["bytes"] <= 60e6 and book["links"] >= 3 * len(SAMPLE)


def test_the_books_check_fails_a_book_that_misses_a_chapter_a_link_on_its_introduction_or_its_text(
        short_books, built_site, tmp_path, monkeypatch):
    """pdf.check, which `make pdf` runs on the whole book, can fail: a chapter the outline lacks, an
    introduction that does not offer the PDF, a chapter whose title and formula are not in the text
    (on the English book: reading the Chinese one's fonts takes 2 s a check)."""
    lang = "en"
    path, chapters = short_books[lang]["path"], _chapters(built_site, lang)
    with pytest.raises(pdf.PdfError, match="chapters missing from the outline"):
        pdf.check(path, lang, [*chapters, ("book/not_printed", "A chapter that is not in the book")])
    intro = tmp_path / "intro.html"
    intro.write_text('<article class="bd-article"><h1>Book</h1></article>', encoding="utf-8")
    with pytest.raises(pdf.PdfError, match="does not offer"):
        pdf.check(path, lang, chapters, offered=intro)
    monkeypatch.setitem(pdf.KNOWN_TEXT, lang, (pdf.KNOWN_TEXT[lang][0], "words the chapter does not hold"))
    with pytest.raises(pdf.PdfError, match="not in the text of the self-attention chapter"):
        pdf.check(path, lang, chapters)


def test_only_pages_of_the_book_make_a_short_book():
    order = pdf.book_order(pdf.ROOT, SAMPLE)
    assert [p for _, names in order for p in names] == list(SAMPLE)
    assert order[0][0] is None and all(caption for caption, _ in order[1:])  # the root, then the parts that hold one
    with pytest.raises(pdf.PdfError, match="not pages of"):
        pdf.book_order(pdf.ROOT, ("book/intro", "book/no_such_page"))


def test_a_glyph_named_as_a_radical_is_named_as_its_ideograph():
    head = ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n1 begincodespacerange\n<00> <FF>\n"
            "endcodespacerange\n")
    tail = "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    cmap = (head + "2 beginbfchar\n<9D> <2F12>\n<AD> <52A8>\nendbfchar\n"  # KANGXI RADICAL POWER, and 动
            "2 beginbfrange\n<01> <03> <2F00>\n<10> <11> [<0041> <2F08>]\nendbfrange" + tail).encode("latin-1")
    fixed = pdf._radical_free(cmap, {0x2F12: "\u529B", 0x2F08: "\u4EBA"}).decode("latin-1")
    pairs = dict(re.findall(r"<([0-9A-F]+)> <([0-9A-F]+)>", fixed.split("endcodespacerange")[1]))
    assert pairs == {"9D": "529B", "AD": "52A8", "01": "4E00", "02": "4E28", "03": "4E36", "10": "0041", "11": "4EBA"}
    assert fixed.startswith(head) and fixed.endswith(tail) and "bfrange" not in fixed
    plain = (head + "1 beginbfchar\n<01> <529B>\nendbfchar" + tail).encode("latin-1")
    assert pdf._radical_free(plain, {}) is None  # nothing to change: the PDF is not written again
    # a radical with no compatibility form (a simplified one), named by the ideograph the font draws alike
    one = (head + "1 beginbfchar\n<05> <2ED3>\nendbfchar" + tail).encode("latin-1")
    assert "<05> <957F>" in pdf._radical_free(one, {0x2ED3: "\u957F"}).decode("latin-1")


def test_an_update_appended_by_hand_replaces_the_streams_and_keeps_the_file_before_it(tmp_path):
    """pdf.append_update: a reader sees the new stream and every other object as before, the trailer keeps its
    Root and Info and points at the table before it, and the printed file is the update's first bytes, unchanged."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, NameObject

    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.add_metadata({"/Title": "t"})
    refs = []
    for text in (b"one", b"two"):
        stream = DecodedStreamObject()
        stream.set_data(text)
        refs.append(writer._add_object(stream))
    writer.pages[0][NameObject("/Streams")] = ArrayObject(refs)
    path = tmp_path / "a.pdf"
    writer.write(path)
    printed = path.read_bytes()
    before = PdfReader(path)
    pdf.append_update(path, before.trailer, {(refs[1].idnum, refs[1].generation): b"TWO, again"})
    after = PdfReader(path, strict=True)
    assert [ref.get_object().get_data() for ref in after.pages[0]["/Streams"]] == [b"one", b"TWO, again"]
    assert path.read_bytes().startswith(printed) and path.read_bytes().count(b"%%EOF") == printed.count(b"%%EOF") + 1
    assert after.metadata.title == "t" and after.trailer.raw_get("/Root").idnum == before.trailer.raw_get("/Root").idnum
    assert after.trailer["/Prev"] == int(printed[printed.rindex(b"startxref") + 9:].split()[0])


def test_the_ideographs_of_the_radicals_come_from_the_fonts_that_print_chinese():
    table = pdf.radical_ideographs()
    if not table:
        pytest.skip("no font for Chinese here (fc-list :lang=zh): .ci/run installs fonts-noto-cjk")
    assert table[0x2F12] == "\u529B" and table[0x2ED3] == "\u957F" and table[0x2EC5] == "\u89C1"  # 力 长 见
    assert all(0x4E00 <= ord(c) <= 0x9FFF or 0x3400 <= ord(c) <= 0x4DBF or ord(c) >= 0x20000 for c in table.values())


def _page(html: str, name: str, tmp_path) -> pathlib.Path:
    (tmp_path / "book").mkdir(exist_ok=True)
    (tmp_path / "book" / f"{name}.html").write_text(html, encoding="utf-8")
    return tmp_path


def test_chapter_ids_and_links_made_unique(tmp_path):
    """Inside the book's document: ids carry their chapter's name, a link to another chapter becomes
    an anchor, a link out of the book goes to the published site, a figure still loads, an optional
    section is open, an explorer says where it lives."""
    page = ('<html><head></head><body><article class="bd-article"><section id="intro-x"><h1>T<a class="headerlink"'
            ' href="#intro-x">#</a></h1><p><a href="#intro-x">self</a> <a href="other.html#sec">other</a> '
            '<a href="other.html">whole</a> <a href="../genindex.html">index</a> <a href="https://a.example/">out</a>'
            '</p><img src="../_images/f.png" loading="lazy"><details class="attn-deeper"><summary>s</summary>x</details>'
            '<label for="intro-x">l</label>'
            '<script type="application/vnd.jupyter.widget-view+json">{}</script></section></article></body></html>')
    site = _page(page, "one", tmp_path)
    ch = pdf.Chapter(site, "book/one", {"book/one", "book/other"}, "https://o.github.io/r/", "en")
    html = str(ch.article)
    assert 'id="book-one--intro-x"' in html and 'for="book-one--intro-x"' in html
    assert 'href="#book-one--intro-x"' in html and 'href="#book-other--sec"' in html and 'href="#book-other"' in html
    assert 'href="https://o.github.io/r/genindex.html"' in html and 'href="https://a.example/"' in html
    assert 'src="_images/f.png"' in html and "loading" not in html
    assert "<h2" in html and "<h1" not in html and "headerlink" not in html
    assert re.search(r"<details[^>]*open", html)
    assert "widget-view" not in html and "https://o.github.io/r/book/one.html" in html
    assert ch.title == "T"


def test_pdf_offered_once_under_the_title(tmp_path):
    (tmp_path / "book").mkdir()
    intro = tmp_path / "book" / "intro.html"
    intro.write_text('<nav>x</nav><article class="bd-article"><section><h1>Book</h1><p>first</p></section></article>')
    for _ in range(2):
        pdf.offer(tmp_path, pdf.ROOT, "zh")
    text = intro.read_text()
    assert text.count("attn-pdf") == 1 and "全书 PDF 版" in text
    assert re.search(r'</h1>\s*<p class="attn-pdf"><a href="\.\./attention-executed-zh\.pdf"', text), text


def test_printed_chapter_reads_as_a_document(browser, site_server):
    """A chapter printed from the browser: no navigation, wrapped code, open optional sections, the
    addresses of links out of the book shown; and nothing of this on screen."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{site_server}/book/self_attention.html", wait_until="load")
    look = """() => {
        const shown = (s) => [...document.querySelectorAll(s)].some(e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden');
        const pre = document.querySelector('article pre');
        const deeper = document.querySelector('details.attn-deeper');
        const links = [...document.querySelectorAll('article a[href^="http"]')].filter(a => !a.closest('pre, code'));
        const out = links.find(a => a.textContent.trim() !== a.href);
        const asText = links.find(a => a.textContent.trim() === a.href);
        return {
            nav: ['header.bd-header', '.bd-sidebar-primary', '.bd-sidebar-secondary', '.prev-next-footer',
                  '.attn-lang', '.bd-footer', '.search-button-field'].filter(shown),
            pre: pre ? getComputedStyle(pre).whiteSpace : null,
            deeperOpen: deeper ? deeper.open && deeper.lastElementChild.getClientRects().length > 0 : null,
            after: out ? getComputedStyle(out, '::after').content : null,
            afterAsText: asText ? getComputedStyle(asText, '::after').content : null,
            article: document.querySelector('article.bd-article').getBoundingClientRect().width,
        };
    }"""
    screen = page.evaluate(look)
    page.emulate_media(media="print")
    page.evaluate("dispatchEvent(new Event('beforeprint'))")
    state = page.evaluate(look)
    # the links out of the book: the explorers' appendix names a library; the references show their URLs
    page.goto(f"{site_server}/book/explorers.html", wait_until="load")
    state["after"] = page.evaluate(look)["after"]
    page.emulate_media(media="screen")
    screen["after"] = page.evaluate(look)["after"]
    page.emulate_media(media="print")
    page.goto(f"{site_server}/book/references.html", wait_until="load")
    state["afterAsText"] = page.evaluate(look)["afterAsText"]
    page.close()
    assert len(screen["nav"]) >= 3 and screen["after"] in ("none", "normal"), screen  # on screen: as before
    assert state["nav"] == [], state
    assert state["pre"] == "pre-wrap", state
    assert state["deeperOpen"] in (True, None), state
    assert state["after"] and "http" in state["after"], state
    assert state["afterAsText"] in ("none", "normal"), state  # an address is not shown twice
    assert state["article"] > 600, state  # the text takes the page's width, no sidebar's place kept
