"""The static site: builds with zero warnings, links Colab to this repository, loads nothing from
other hosts."""

import re

import pytest

import notebooks


def _pages(site):
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)


def test_site_builds_with_zero_warnings(built_site):
    log = (built_site / ".build-log.txt").read_text()
    assert "build succeeded" in log
    assert not re.search(r"\bWARNING\b", log), log[-3000:]
    assert (built_site / "book" / "self_attention.html").is_file()


def test_every_chapter_has_a_colab_button_for_this_repository(built_site):
    url, branch = notebooks.repository()
    slug = url.removeprefix("https://github.com/")
    for nb in notebooks.chapters():
        page = built_site / nb.relative_to(nb.parents[1]).with_suffix(".html")
        text = page.read_text()
        expected = f"https://colab.research.google.com/github/{slug}/blob/{branch}/{nb.parent.name}/{nb.name}"
        assert expected in text, f"{page.name}: no Colab link to {expected}"


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
