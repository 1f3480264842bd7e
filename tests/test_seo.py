"""What search engines and a phone's browser read from every page of both editions (_ext/attn_seo.py):
a meta description from the page's own text, absolute hreflang alternates that answer each other, a
sitemap of every page, and figures that carry their size, load lazily below the first one and come in
the sizes a screen needs."""

import pathlib
import re
import sys
import xml.etree.ElementTree as ET
from html import unescape

import pytest
from PIL import Image

from scripts import notebooks

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "_ext"))
import attn_seo  # noqa: E402

GENERATED = {"404.html", "index.html", "genindex.html", "search.html", "py-modindex.html"}
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def _pages(site):
    return sorted(p for p in site.rglob("*.html") if not {"_static", "_sources", "_images"} & set(p.parts))


def _content_pages(site):
    return [p for p in _pages(site) if p.name not in GENERATED]


def _published_root() -> str:
    url, _ = notebooks.repository()
    owner, repo = url.rstrip("/").removeprefix("https://github.com/").split("/")
    return f"https://{owner.lower()}.github.io/{repo}/"


def _plain(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", html))).strip()


def _alternates(text: str) -> dict[str, str]:
    head = text[: text.find("</head>")]
    return {unescape(lang): unescape(href)
            for lang, href in re.findall(r'<link rel="alternate" hreflang="([^"]+)" href="([^"]+)">', head)}


# --------------------------------------------------------------------------- descriptions
@pytest.mark.parametrize(("text", "limit", "want"), [
    ("Short enough.", 160, "Short enough."),
    ("One sentence here. " + "Two " * 50, 30, "One sentence here."),
    ("Short. " + "Two " * 50, 30, "Short. Two Two Two Two Two…"),  # a sentence too short to stand alone
    ("word " * 60, 30, "word word word word word…"),
    ("句子中的每个词元都向其他所有词元提出一个问题，再按彼此匹配的程度加权。这就是自注意力。" * 3, 40,
     "句子中的每个词元都向其他所有词元提出一个问题，再按彼此匹配的程度加权。"),
    ("每个词元都向其他所有词元提出一个问题，" * 5, 40, "每个词元都向其他所有词元提出一个问题，每个词元都向其他所有词元提出一个问题…"),
])
def test_a_description_is_cut_at_a_sentence_or_a_word(text, limit, want):
    got = attn_seo.shorten(text, limit)
    assert got == want and len(got) <= limit


def test_every_page_of_both_editions_has_a_description_from_its_own_text(built_site):
    for page in _pages(built_site):
        rel = page.relative_to(built_site).as_posix()
        text = page.read_text()
        found = re.findall(r'<meta name="description" content="([^"]*)"', text)
        assert len(found) == 1, f"{rel}: {len(found)} meta descriptions"
        desc = unescape(found[0])
        limit = attn_seo.DESCRIPTION_CHARS["zh" if rel.startswith("zh/") else "en"]
        assert 10 <= len(desc) <= limit, f"{rel}: {desc!r}"
        if page.name in GENERATED:
            continue
        article = _plain(text[text.find("<article"): text.find("</article>")])
        # the page's own words (a short first paragraph has the page's title in front of it): its start as
        # written, then every longer word (maths is typeset on the page, plain in the description)
        tails = [desc.rstrip("…")] + [desc.rstrip("…")[m.end():] for m in re.finditer(r"[:：]\s*", desc)]
        own = next((t for t in tails if t[:20] in article), None)
        assert own, f"{rel}: {desc!r} is not the page's text"
        missing = [w for w in re.findall(r"[A-Za-z]{4,}|[\u4e00-\u9fff]{2,}", own) if w not in article]
        assert not missing, f"{rel}: {missing} of {desc!r} are not on the page"


# --------------------------------------------------------------------------- hreflang
def test_hreflang_alternates_are_absolute_on_the_published_site_and_answer_each_other(built_site):
    root = _published_root()
    for page in _content_pages(built_site):
        rel = page.relative_to(built_site).as_posix()
        text = page.read_text()
        links = _alternates(text)
        zh = rel.startswith("zh/")
        own, other = ("zh-CN", "en") if zh else ("en", "zh-CN")
        assert set(links) == {own, other, "x-default"}, f"{rel}: {links}"
        assert all(u.startswith(root) for u in links.values()), f"{rel}: {links}"
        assert links[own] == root + rel, f"{rel}: its own alternate is {links[own]}"
        assert links["x-default"] == links["en"]
        canonical = re.findall(r'<link rel="canonical" href="([^"]+)"', text)
        assert canonical == [root + rel], f"{rel}: canonical {canonical}"
        back = _alternates((built_site / links[other].removeprefix(root)).read_text())
        assert back == links, f"{rel}: the {other} page's alternates {back} do not answer {links}"


# --------------------------------------------------------------------------- sitemap
def test_the_sitemap_lists_every_page_of_both_editions_with_its_alternates(built_site):
    root = _published_root()
    index = ET.parse(built_site / "sitemap.xml").getroot()
    assert index.tag == SM + "sitemapindex"
    maps = [e.text for e in index.iter(SM + "loc")]
    assert maps == [root + "sitemap-en.xml", root + "zh/sitemap-zh-CN.xml"]
    listed = {}
    for url in maps:
        urlset = ET.parse(built_site / url.removeprefix(root)).getroot()
        assert urlset.tag == SM + "urlset"
        for entry in urlset.findall(SM + "url"):
            loc = entry.find(SM + "loc").text
            alts = {a.get("hreflang"): a.get("href") for a in entry.findall(XHTML + "link")}
            listed[loc] = alts
    want = {root + p.relative_to(built_site).as_posix() for p in _content_pages(built_site)}
    assert set(listed) == want, (sorted(set(listed) - want), sorted(want - set(listed)))
    for loc, alts in listed.items():
        page = built_site / loc.removeprefix(root)
        assert page.is_file(), loc
        assert alts == _alternates(page.read_text()), loc


# --------------------------------------------------------------------------- figures
def _attrs(tag: str) -> dict[str, str]:
    return {k: unescape(v) for k, v in re.findall(r'\s([a-z-]+)="([^"]*)"', tag)}


def test_only_an_image_on_the_first_screen_is_fetched_at_once(tmp_path):
    png = tmp_path / "f.png"
    Image.new("RGB", (40, 20)).save(png)
    near = "<p>" + "word " * 20 + "</p>"
    far = "<p>" + "word " * (attn_seo.FIRST_SCREEN_CHARS // 5 + 1) + "</p>"
    for before, eager in [(near, True), (far, False)]:
        html = f'<img src="f.png"><article>{before}<img src="f.png"><p>x</p><img src="f.png"></article>'
        tags = re.findall(r"<img\b[^>]*>", attn_seo.size_images(html, tmp_path / "p.html", 0, {}))
        assert ['loading="lazy"' in t for t in tags] == [True, not eager, True], (eager, tags)


def test_the_writers_of_the_twice_drawn_png_chunks_use_the_names_the_site_reads():
    from attn.book import viz
    from scripts import assets

    assert (viz.TEXT_PX_KEY, assets.PIXEL_RATIO_KEY) == (attn_seo.TEXT_PX_KEY, attn_seo.PIXEL_RATIO_KEY)


def test_every_image_carries_its_size_loads_lazily_below_the_first_figure_and_comes_in_smaller_sizes(built_site):
    variants = 0
    for page in _pages(built_site):
        rel = page.relative_to(built_site).as_posix()
        text = page.read_text()
        article = text.find("<article")
        first = True
        for m in re.finditer(r"<img\b[^>]*>", text):
            a = _attrs(m.group(0))
            src = page.parent / a["src"]
            assert "width" in a and "height" in a, f"{rel}: {a['src']} has no size"
            assert a.get("decoding") == "async", f"{rel}: {a['src']}"
            in_article = 0 <= article < m.start()
            if in_article and first and len(attn_seo._text(text[article:m.start()])) < attn_seo.FIRST_SCREEN_CHARS:
                assert "loading" not in a, f"{rel}: the article's first image ({a['src']}) must load at once"
            else:
                assert a.get("loading") == "lazy", f"{rel}: {a['src']} does not load lazily"
            first = first and not in_article
            if src.suffix != ".png":
                continue
            with Image.open(src) as img:
                fw, fh = img.size
                twice = attn_seo.TEXT_PX_KEY in img.text  # a figure (attn.book.viz.png_2x)
                double = twice or img.text.get(attn_seo.PIXEL_RATIO_KEY) == "2"  # scripts/assets.py's toggles
            w, h = int(a["width"]), int(a["height"])
            assert w == (fw / 2 if double else fw) or f"width: {w}px" in a.get("style", ""), f"{rel}: {a['src']} {w} of {fw}"
            assert abs(h - w * fh / fw) <= 1, f"{rel}: {a['src']} is {w}x{h}, its file {fw}x{fh}"
            if src.name in {"minus.png", "plus.png"}:
                assert (w, h, fw, fh) == (11, 11, 22, 22), f"{rel}: the module index's toggle {w}x{h}, file {fw}x{fh}"
            if not twice:
                continue
            assert "srcset" in a and "sizes" in a, f"{rel}: {a['src']} has no smaller sizes"
            entries = [e.strip().split() for e in a["srcset"].split(",")]
            assert entries[-1] == [a["src"], f"{fw}w"], f"{rel}: the full-size file last: {entries}"
            for url, width in entries[:-1]:
                with Image.open(page.parent / url) as small:
                    assert f"{small.size[0]}w" == width, f"{rel}: {url} is {small.size[0]} px wide, said {width}"
                variants += 1
            if "data-min-width" in a:  # a phone at 2 device pixels per CSS pixel gets a sharp figure
                need = 2 * int(a["data-min-width"])
                assert any(int(wd[:-1]) >= min(need, fw) for _, wd in entries), f"{rel}: {a['src']}"
                assert f"max({a['data-min-width']}px" in a["sizes"], f"{rel}: {a['sizes']}"
    assert variants >= 100
