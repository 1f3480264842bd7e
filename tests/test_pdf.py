"""Print and PDF (issue 34): a chapter printed from the browser reads as a document (attn-print.css),
and `make pdf` (scripts/pdf.py) writes one PDF per edition of the whole book, with an outline of
every chapter, page numbers and links that stay inside it."""

from __future__ import annotations

import pathlib
import re

import pytest
from bs4 import BeautifulSoup

from scripts import pdf

EDITIONS = {"en": "", "zh": "zh"}
# A heading and the words of a formula each edition's PDF must hold as text (so searchable, and
# copied as written): the self-attention chapter's title and its scaled dot-product.
KNOWN_TEXT = {"en": ["Self-attention", "softmax"], "zh": ["自注意力", "softmax"]}


def _pypdf():
    try:
        import pypdf
    except ImportError:
        pytest.fail("pypdf is missing from .venv: run make setup (requirements.txt pins it)")
    return pypdf


@pytest.fixture(scope="module")
def book_pdfs(built_site) -> dict[str, pathlib.Path]:
    """The PDFs of the built site, printed once per run (the first worker that needs them, under a lock)."""
    from filelock import FileLock

    paths = {lang: built_site / place / pdf.PDF_NAME[lang] for lang, place in EDITIONS.items()}
    with FileLock(str(built_site.parent / "pdf.lock")):
        missing = tuple(lang for lang, path in paths.items() if not path.exists())
        if missing:
            for r in pdf.build(built_site.parents[1], missing):
                print(f"{r['edition']}: {r['pages']} pages, {r['bytes'] / 1e6:.1f} MB, printed in {r['seconds']} s")
    return paths


def _chapter_titles(built_site: pathlib.Path, lang: str) -> list[str]:
    src = pdf.EDITIONS[lang][0]
    titles = []
    for _, names in pdf.book_order(src):
        for name in names:
            html = (built_site / EDITIONS[lang] / f"{name}.html").read_text(encoding="utf-8")
            h1 = BeautifulSoup(html, "html.parser").select_one("article.bd-article h1")
            titles.append(" ".join(h1.get_text(" ", strip=True).rstrip("#").split()))
    return titles


def _text(page) -> str:
    """A page's text, as a PDF viewer's search and copy read it (the fonts' text maps)."""
    return page.extract_text()


def _radicals_in_text_maps(reader) -> dict[str, int]:
    """The radicals (scripts/pdf.py RADICALS) the fonts' text maps name, with how many glyphs map to each."""
    found: dict[str, int] = {}
    for stream in pdf.text_maps(reader.pages):
        for chars in pdf.cmap_mapping(stream.get_data().decode("latin-1")).values():
            for c in chars:
                if pdf.RADICALS[0] <= ord(c) <= pdf.RADICALS[1]:
                    found[c] = found.get(c, 0) + 1
    return found


def _outline(reader, items=None, depth=0) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of every bookmark."""
    out = []
    for item in reader.outline if items is None else items:
        if isinstance(item, list):
            out += _outline(reader, item, depth + 1)
        else:
            out.append((depth, " ".join(item.title.split()), reader.get_destination_page_number(item)))
    return out


@pytest.mark.parametrize("lang", EDITIONS)
def test_pdf_outline_pages_and_links(book_pdfs, built_site, lang):
    pypdf = _pypdf()
    path = book_pdfs[lang]
    reader = pypdf.PdfReader(path)
    n = len(reader.pages)
    titles = _chapter_titles(built_site, lang)
    size = path.stat().st_size
    print(f"{lang}: {n} pages, {size / 1e6:.1f} MB")
    # the whole book, and not absurdly large: a few pages at least per chapter, a bounded size
    assert 5 * len(titles) <= n <= 1500, n
    assert size <= 60e6, f"{size / 1e6:.1f} MB"

    # every chapter in the outline, in the book's order, each bookmark landing on a page holding its title
    # (one level below the parts; compared without spaces: Chromium drops the space where a long heading wraps)
    outline = _outline(reader)
    entries: dict[str, int] = {}
    for depth, title, page in outline:
        if depth == 1:
            entries.setdefault(re.sub(r"\s+", "", title), page)
    titles = [re.sub(r"\s+", "", t) for t in titles]
    missing = [t for t in titles if t not in entries]
    assert not missing, f"chapters missing from the outline: {missing}; it has {[t for _, t, _ in outline][:40]}"
    pages = [entries[t] for t in titles]
    assert pages == sorted(pages) and len(set(pages)) == len(pages), pages
    for title in (titles[1], titles[-1]):
        text = re.sub(r"\s+", "", _text(reader.pages[entries[title]]))
        assert title[-6:] in text, (title, text[:300])

    # the introduction offers the PDF (scripts/pdf.py links it once written)
    intro = (built_site / EDITIONS[lang] / f"{pdf.book_order(pdf.EDITIONS[lang][0])[0][1][0]}.html").read_text(encoding="utf-8")
    assert re.search(rf'class="attn-pdf"><a href="(\.\./)*{re.escape(pdf.PDF_NAME[lang])}"', intro)

    # page numbers in the footer: "k / n"
    for k in (2, n // 2, n):
        text = _text(reader.pages[k - 1])
        assert re.search(rf"(?<!\d){k}\s*/\s*{n}(?!\d)", text), f"page {k}: no '{k} / {n}' in {text[-200:]!r}"

    # links: those into the book land on a page of this PDF; none leads to the local server that printed it
    internal, external = 0, []
    named = reader.named_destinations
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            action = a.get("/A")
            dest = a.get("/Dest") if action is None else action.get_object().get("/D")
            if action is not None and action.get_object().get("/S") == "/URI":
                external.append(str(action.get_object()["/URI"]))
                continue
            assert dest is not None, a
            if isinstance(dest, (str, bytes)) or not hasattr(dest, "__len__"):
                assert str(dest) in named, f"link to an unknown destination {dest!r}"
                target = reader.get_destination_page_number(named[str(dest)])
            else:
                target = reader.get_page_number(dest[0].get_object())
            assert 0 <= target < n
            internal += 1
    assert internal >= 3 * len(titles), internal  # the contents alone links every chapter
    local = [u for u in external if re.match(r"https?://(127\.0\.0\.1|localhost)", u) or not u.startswith(("https://", "http://", "mailto:"))]
    assert not local, local[:10]

    # known text, in the self-attention chapter's first pages: its heading and a formula's words,
    # extractable (the fonts map back to characters)
    first = entries[titles[2]]
    text = " ".join(" ".join(_text(p) for p in reader.pages[first : first + 12]).split())
    for words in KNOWN_TEXT[lang]:
        assert words in text, words
    # the CJK fonts' glyphs named by their ideographs, not by the radicals drawn alike (自注意力, not 自注意⼒)
    assert _radicals_in_text_maps(reader) == {}


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
