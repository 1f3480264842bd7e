"""The static site: builds with zero warnings, links Colab to this repository, loads nothing from
other hosts."""

import re

import pytest

from scripts import notebooks
from scripts import reader


def _pages(site):
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)


def test_site_builds_with_zero_warnings(built_site):
    log = (built_site / ".build-log.txt").read_text()
    assert "build succeeded" in log
    assert not re.search(r"\bWARNING\b", log), log[-3000:]
    assert (built_site / "book" / "self_attention.html").is_file()


def test_every_chapter_launches_its_reader_edition_in_colab_and_binder(built_site, root):
    url, branch = notebooks.repository()
    slug = url.removeprefix("https://github.com/")
    for nb in notebooks.chapters():
        page = built_site / nb.relative_to(root).with_suffix(".html")
        text = page.read_text()
        edition = reader.reader_path(nb).relative_to(root).as_posix()
        assert edition.startswith("reader/book/")
        colab = f"https://colab.research.google.com/github/{slug}/blob/{branch}/{edition}"
        binder = f"https://mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/{edition}"
        assert colab in text, f"{page.name}: no Colab link to {colab}"
        assert binder in text, f"{page.name}: no Binder link to {binder}"


def test_the_download_button_serves_the_reader_edition(built_site, root):
    for nb in notebooks.chapters():
        rel = nb.relative_to(root)
        page = (built_site / rel.with_suffix(".html")).read_text()
        assert f"_sources/{rel.as_posix()}" in page, f"{rel}: no download link"
        served = (built_site / "_sources" / rel).read_bytes()
        assert served == reader.reader_path(nb).read_bytes(), f"{rel}: the download is not the reader edition"


def test_pages_load_no_script_style_or_font_from_another_host(built_site):
    pattern = re.compile(r'<(?:script|link|img|iframe)[^>]+(?:src|href)="(https?:)?//(?!127\.0\.0\.1)[^"]+"')
    for page in _pages(built_site):
        text = page.read_text()
        for m in pattern.finditer(text):
            tag = m.group(0)
            # <link rel="canonical"> style metadata is not a request; stylesheets, icons and preloads are.
            if "<link" in tag and not re.search(r'rel="(stylesheet|preload|icon|modulepreload|prefetch)"', tag):
                continue
            pytest.fail(f"{page.relative_to(built_site)} loads from another host: {tag[:200]}")


def test_maths_fonts_are_served_by_the_site(built_site):
    """The formulas are typeset when the site is built (tests/test_maths.py); what a page still
    needs of MathJax, its CHTML fonts, comes from the site itself."""
    page = (built_site / "book" / "self_attention.html").read_text()
    assert 'url("../_static/mathjax/woff-v2/MathJax_Main-Regular.woff")' in page
    assert (built_site / "_static" / "mathjax" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()


def test_pages_without_widgets_load_no_widget_runtime(built_site):
    for page in _pages(built_site):
        text = page.read_text()
        if "application/vnd.jupyter.widget-state+json" not in text:
            assert "widgets/runtime.js" not in text, page.name


SITE_BUDGET = 30_000_000  # bytes on disk for each edition of the site (it was 42 MB with all of MathJax)


def test_built_site_size_is_reported_and_under_budget(built_site):
    """Each edition (English at the root, Chinese under zh/) within the budget; the sizes are printed.
    The book's PDF (about 20-25 MB, written into the site by scripts/pdf.py once the pages are built)
    is not counted: tests/test_pdf.py bounds its size."""
    from scripts import pdf

    editions: dict[str, dict[str, int]] = {"en": {}, "zh": {}}
    for f in built_site.rglob("*"):
        if f.is_file() and f.name != ".build-log.txt" and f.name not in pdf.PDF_NAME.values():
            parts = f.relative_to(built_site).parts
            lang, parts = ("zh", parts[1:]) if parts[0] == "zh" else ("en", parts)
            top = "/".join(parts[:2]) if parts[0] == "_static" else parts[0]
            editions[lang][top] = editions[lang].get(top, 0) + f.stat().st_size
    for lang, sizes in editions.items():
        total = sum(sizes.values())
        print(f"\nbuilt site, {lang} edition: {total / 1e6:.1f} MB")
        for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  {name:32s} {size / 1e6:6.2f} MB")
        assert total <= SITE_BUDGET, f"the {lang} edition is {total / 1e6:.1f} MB, budget {SITE_BUDGET / 1e6:.0f} MB"
    assert not list((built_site / "_static/mathjax").rglob("*.js")), "no MathJax script: the maths are typeset at build time"


class _Links(__import__("html.parser").parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key])


def _broken_links(site, pages) -> tuple[list[str], int, int]:
    """Links from ``pages`` (except 404.html) to a missing file or to a missing anchor; any HTML page
    a link points into is parsed for its ids, whether or not it is one of ``pages`` (a page under
    ``_static`` or left out of the list is checked like the others). Returns (broken, links
    checked, anchors checked)."""
    import urllib.parse

    parsed: dict = {}

    def parse(page):
        if page not in parsed:
            parsed[page] = _Links()
            parsed[page].feed(page.read_text(errors="replace"))
        return parsed[page]

    broken, checked, anchors = [], 0, 0
    for page in pages:
        if page.name == "404.html":
            continue  # absolute links under the published path: checked below
        for link in parse(page).links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or link.startswith(("//", "mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else page
            checked += 1
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
            elif parts.fragment and target.suffix == ".html":
                anchors += 1
                if urllib.parse.unquote(parts.fragment) not in parse(target).ids:
                    broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    return broken, checked, anchors


def test_every_internal_link_and_anchor_on_the_site_resolves(built_site):
    broken, checked, anchors = _broken_links(built_site, _pages(built_site))
    assert checked > 100 and anchors > 20
    assert broken == [], "\n".join(broken[:40])


def test_the_link_checker_parses_the_pages_links_point_into(tmp_path):
    """An anchor into a page that is not one of the pages walked (under _static/) is checked too."""
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "b.html").write_text('<h1 id="here">b</h1>')
    (tmp_path / "a.html").write_text('<a id="top" href="_static/b.html#here">ok</a> <a href="_static/b.html#gone">x</a>'
                                     ' <a href="#top">self</a> <a href="#nowhere">y</a> <a href="c.html">z</a>')
    broken, checked, anchors = _broken_links(tmp_path, [tmp_path / "a.html"])
    assert broken == ["a.html -> _static/b.html#gone (no such anchor)", "a.html -> #nowhere (no such anchor)",
                      "a.html -> c.html"]
    assert (checked, anchors) == (5, 4)


def test_404_page_links_under_the_published_path_of_this_repository(built_site):
    url, _ = notebooks.repository()
    prefix = notebooks.book_config()["sphinx"]["config"]["notfound_urls_prefix"]
    assert prefix == "/" + url.rstrip("/").rsplit("/", 1)[1] + "/", "GitHub Pages serves the book under /<repo>/"
    text = (built_site / "404.html").read_text()
    # Links are written from the site root, found by the page's first script: the prefix, else / (a host's root).
    assert f'location.pathname.indexOf("{prefix}") === 0 ? "{prefix}" : "/"' in text
    assert not re.findall(r'(?:href|src)="(/[^"#?]+)', text), "no absolute path: they would fail at another root"
    refs = re.findall(r'(?:href|src)="([^"#?:\s][^"#?:]*)"', text) + re.findall(r'attnRoot \+ "([^"#?]+)', text)
    assert len(refs) > 20
    for ref in refs:
        assert (built_site / ref).exists(), ref


def test_publishing_workflow_builds_with_make_book_and_publishes_the_built_html(root):
    import yaml

    flow = yaml.safe_load((root / ".github/workflows/pages.yml").read_text())
    steps = flow["jobs"]["build"]["steps"]
    assert any(s.get("run", "").strip() == "make book" for s in steps), "the same command as the README"
    upload = next(s for s in steps if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "_build/html"
    python = next(s for s in steps if "setup-python" in s.get("uses", ""))
    assert python["with"]["python-version"] == "3.11"
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads the key `on` as true
    assert triggers["push"]["branches"] == [notebooks.repository()[1]]


def test_pages_link_the_books_own_stylesheet_for_tables(built_site):
    css = built_site / "_static" / "attn.css"
    assert css.exists() and "table.attn-table" in css.read_text()
    page = (built_site / "book" / "self_attention.html").read_text()
    assert "_static/attn.css" in page and 'class="attn-table"' in page


DEEPER_LABEL = re.compile(r"^\(([\w.-]+-deeper)\)=\s*$", re.M)


def test_optional_sections_are_folded_with_their_heading_left_open(built_site, root):
    """A heading labelled ``(x-deeper)=`` keeps its heading on the page and folds its body in a closed
    <details> (``_ext/attn_book.py``, 8), in both editions; the label's anchor still resolves."""
    import nbformat
    from docutils.nodes import make_id

    found = 0
    for nb in notebooks.chapters():
        labels = [m.group(1) for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "markdown"
                  for m in DEEPER_LABEL.finditer(c.source)]
        for edition, summary in (("", "Optional: open this section"), ("zh/", "选读：展开本节")):
            page = (built_site / edition / nb.relative_to(root).with_suffix(".html")).read_text()
            folds = re.findall(r'<details class="attn-deeper"><summary>([^<]*)</summary>', page)
            assert folds == [summary] * len(labels), f"{edition}{nb.name}: {len(folds)} folds for labels {labels}"
            for label in labels:  # Sphinx writes the label as an id (underscores become hyphens)
                assert f'id="{make_id(label)}"' in page, f"{edition}{nb.name}: no anchor {make_id(label)}"
        found += len(labels)
    assert found >= 1, "no chapter has an optional section yet"
