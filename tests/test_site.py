"""The static site: builds with zero warnings, links Colab to this repository, loads nothing from
other hosts."""

import re

import pytest

import notebooks
import reader


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


def test_mathjax_is_served_by_the_site(built_site):
    page = (built_site / "book" / "self_attention.html").read_text()
    assert re.search(r'src="\.\./_static/mathjax/tex-chtml\.js', page)
    assert (built_site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_pages_without_widgets_load_no_widget_runtime(built_site):
    for page in _pages(built_site):
        text = page.read_text()
        if "application/vnd.jupyter.widget-state+json" not in text:
            assert "widgets/embed-amd.js" not in text and "widgets/require.js" not in text, page.name
