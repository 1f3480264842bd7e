"""Lighthouse (mobile profile) on one page of each type, both editions (issue 34): performance >= 90,
accessibility, best practices and SEO 100, LCP <= 2.5 s, TBT <= 200 ms, CLS <= 0.1.

`make test` runs this file on its own after the parallel suite, on the site that suite built
(ATTN_SITE): Lighthouse's timings are the page's CPU work scaled by a slowdown factor, and measured
while three workers share two cores they describe the load, not the page. The slowdown is also
scaled to the machine's speed at the moment of each audit (scripts/audit.py, cpu_multiplier).
Without ATTN_SITE the file builds the site itself (built_site), as any other site test.
Pages still short of the performance bounds are listed in SHORT_TODAY with the reason and a floor."""

import os
import pathlib

import pytest

from scripts import audit

pytestmark = [pytest.mark.slow, pytest.mark.site, pytest.mark.browser]

BOUNDS = {"performance": 90, "accessibility": 100, "best-practices": 100, "seo": 100}
LCP_MS, TBT_MS, CLS = 2500, 200, 0.1


@pytest.fixture(scope="module")
def site(request) -> pathlib.Path:
    given = os.environ.get("ATTN_SITE")
    if not given:
        return request.getfixturevalue("built_site")
    path = pathlib.Path(given)
    if not (path / "book" / "intro.html").is_file():
        pytest.fail(f"ATTN_SITE={given} holds no built site (book/intro.html): run the suite first (make test)")
    return path


def test_cpu_slowdown_follows_the_machines_speed_within_the_profiles_bounds():
    assert audit.cpu_multiplier(audit.HIGH_END_DESKTOP_INDEX) == audit.DEFAULT_MULTIPLIER
    assert audit.cpu_multiplier(3 * audit.HIGH_END_DESKTOP_INDEX) == audit.DEFAULT_MULTIPLIER  # never harsher
    assert audit.cpu_multiplier(audit.HIGH_END_DESKTOP_INDEX / 2) == audit.DEFAULT_MULTIPLIER / 2
    assert audit.cpu_multiplier(10) == 1.0


def test_the_sample_covers_each_page_type_of_both_editions(site):
    assert any(p.startswith("zh/") for p in audit.SAMPLE)
    for page in audit.SAMPLE:
        assert (site / page).is_file(), f"{page}: in scripts/audit.py's SAMPLE but not in the site"


def test_pages_load_one_bundled_style_sheet_and_no_parser_blocking_script(site):
    """attn_perf: the theme's style sheets as one file; every external script in <head> deferred."""
    import gzip
    import re

    for page in ["book/intro.html", "zh/book/causal_attention.html", "search.html"]:
        head = re.search(r"<head>.*?</head>", (site / page).read_text(encoding="utf-8"), re.S).group(0)
        sheets = re.findall(r'<link\b[^>]*rel="stylesheet"[^>]*href="([^"]+)"', head)
        sheets += re.findall(r'<link\b[^>]*href="([^"]+)"[^>]*rel="stylesheet"', head)
        assert sum("attn-bundle-" in s for s in sheets) == 1 and len(sheets) <= 3, (page, sheets)
        blocking = [tag for tag in re.findall(r"<script\b[^>]*\bsrc=[^>]*>", head)
                    if not re.search(r"\b(defer|async)\b|type=\"module\"", tag)]
        assert blocking == [], (page, blocking)
    # the bundle keeps only rules that can match (attn_perf.purge_unused): 89 kB gzip before
    for bundle in [*site.glob("_static/attn-bundle-*.css"), *site.glob("zh/_static/attn-bundle-*.css")]:
        css = bundle.read_bytes()
        assert len(gzip.compress(css)) < 32_000, (bundle.name, len(gzip.compress(css)))
        assert b".fa-github" in css and b".fa-anchor" not in css, "the icons the pages show stay, the others go"


# Pages of the sample short of the performance bounds, each with what stops it and a floor it must not fall
# below (measured alone on a quiet 2-core build machine with this file's settings; some 15 points / 30% of
# slack under what was measured, for Lighthouse's run-to-run spread). Accessibility, best practices and SEO
# have no exception: 100 on every page. A page that meets every bound is reported, to be taken off the list.
# zh/book/causal_attention left the list when the maths fonts stopped holding the first paint
# (attn_maths.FONTS_EARLY): LCP 2.27-2.29 s over five runs, 2.71 s in one.
# book/api/positional left it when MathJax's fonts were cut to the characters the book draws
# (attn_maths.subset_fonts; its fonts 141 -> 71 kB): LCP 1.97-2.40 s over seven runs, against 1.51-2.80 s over 13.
SHORT_TODAY: dict[str, tuple[str, dict]] = {}


def _misses(page: str, r: dict) -> list[str]:
    """What of the issue's bounds (or, for a page in SHORT_TODAY, of its floor) ``r`` misses."""
    floor = SHORT_TODAY.get(page, ("", {}))[1]
    perf = floor.get("performance", BOUNDS["performance"])
    lcp, tbt = floor.get("LCP_ms", LCP_MS), floor.get("TBT_ms", TBT_MS)
    out = [f"{page}: {c} {r[c]} < {b}" for c, b in (BOUNDS | {"performance": perf}).items() if r[c] < b]
    out += [f"{page}: LCP {r['LCP_ms']} ms > {lcp}"] * (r["LCP_ms"] > lcp)
    out += [f"{page}: TBT {r['TBT_ms']} ms > {tbt}"] * (r["TBT_ms"] > tbt)
    out += [f"{page}: CLS {r['CLS']} > {CLS}"] * (r["CLS"] > CLS)
    return out


def test_the_floors_of_pages_short_of_the_bounds_are_below_the_bounds(monkeypatch):
    for page, (why, floor) in SHORT_TODAY.items():
        assert page in audit.SAMPLE and why, page
        assert floor.get("performance", 100) <= BOUNDS["performance"] and floor.get("LCP_ms", 0) >= LCP_MS, page
    good = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100, "LCP_ms": 3000,
            "TBT_ms": 100, "CLS": 0.0}
    assert _misses("book/intro.html", good) == ["book/intro.html: LCP 3000 ms > 2500"]
    assert _misses("zh/book/causal_attention.html", good) == ["zh/book/causal_attention.html: LCP 3000 ms > 2500"]
    monkeypatch.setitem(SHORT_TODAY, "zh/book/causal_attention.html", ("why", {"performance": 80, "LCP_ms": 3600}))
    assert _misses("zh/book/causal_attention.html", good) == []  # in SHORT_TODAY: its floor
    assert _misses("zh/book/causal_attention.html", good | {"seo": 92}) == ["zh/book/causal_attention.html: seo 92 < 100"]


def test_lighthouse_mobile_bounds_on_a_page_of_each_type(site, tmp_path):
    rows = audit.audit(site, audit.SAMPLE, calibrate=True, keep=tmp_path, echo=print)
    # A page that misses is audited twice more and judged by the median of its three runs (Lighthouse's
    # own advice for its run-to-run spread: docs/variability.md)
    again = [page for page, r in rows.items() if _misses(page, r)]
    if again:
        runs = [rows] + [audit.audit(site, again, calibrate=True, keep=tmp_path / f"run{k}", echo=print) for k in (2, 3)]
        for page in again:
            rows[page] = {key: sorted(run[page][key] for run in runs)[1] if isinstance(rows[page][key], (int, float))
                          else rows[page][key] for key in rows[page]}
    table = "\n".join([audit.HEADER, *(audit.format_row(p, r) for p, r in rows.items())])
    print(table)
    done = [page for page in SHORT_TODAY if page in rows and not _misses(page, {**rows[page], "failing": []})
            and rows[page]["performance"] >= BOUNDS["performance"] and rows[page]["LCP_ms"] <= LCP_MS
            and rows[page]["TBT_ms"] <= TBT_MS]
    if done:
        print(f"meets every bound now, take it off SHORT_TODAY: {done}")
    short = [m for page, r in rows.items() for m in _misses(page, r)]
    assert not short, "\n".join(short) + "\n" + table + f"\n(reports in {tmp_path})"
