"""Lighthouse (mobile profile) on pages of a built site, served as GitHub Pages serves it.

    python -m scripts.audit [SITE] [PAGES...] [--json OUT] [--calibrate]

SITE: the built site (default _build/html; `make book`). PAGES: paths under it (default SAMPLE: one
page of each type, both editions). Prints a table (the four category scores, LCP, TBT, CLS, DOM
elements, bytes) and writes every page's numbers to OUT (default SITE/../lighthouse.json).
Lighthouse 12.2.3 comes from node_modules (`make setup`), Chromium from ATTN_CHROMIUM or /usr/bin/chromium.

--calibrate scales Lighthouse's CPU slowdown to the machine's measured speed (see cpu_multiplier): on
a loaded machine the default 4x emulates a slower phone than the mobile profile intends; a page
audited on a machine slower than the profile assumes is audited again with the slowdown scaled.
"""

from __future__ import annotations

import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "scripts" / "lighthouse.mjs"
CHROMIUM = os.environ.get("ATTN_CHROMIUM", "/usr/bin/chromium")
# One page of each type: the landing page (index.html only redirects to it), a chapter with maths and
# figures, the explorers, the references, the glossary, the API reference (its overview and its heaviest
# page), a Chinese chapter, search.
SAMPLE = [
    "book/intro.html", "book/self_attention.html", "book/explorers.html",
    "book/references.html", "book/glossary.html", "book/api/positional.html", "book/api.html",
    "zh/book/causal_attention.html", "search.html",
]
CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]

# Lighthouse's mobile profile slows the CPU 4x, a factor tuned on a high-end desktop (its docs,
# docs/throttling.md: BenchmarkIndex 1500-2000) to emulate a mid-tier phone. The index measures
# the host as it is now: on a machine busy with other work (make test's workers) it falls, each
# task takes longer, and the 4x on top emulates a slower phone than the profile means, so the
# scores fall with the load, not with the page. Lighthouse's advice is to set the multiplier to
# the host's index over the target device's; the target here is what 4x makes of the low end of a
# high-end desktop (1500 / 4 = 375). The multiplier never goes below 1, nor above the profile's 4:
# the bounds are those of Lighthouse's own mobile profile, so a machine faster than 1500 is audited as
# a default run audits it (this project's machine, quiet, measures 2300-2600: there 4x emulates a
# somewhat faster phone than the target, as every default Lighthouse run there does).
HIGH_END_DESKTOP_INDEX = 1500
DEFAULT_MULTIPLIER = 4.0


def cpu_multiplier(benchmark_index: float) -> float:
    return max(1.0, min(DEFAULT_MULTIPLIER, DEFAULT_MULTIPLIER * benchmark_index / HIGH_END_DESKTOP_INDEX))


class Lighthouse:
    """Lighthouse (mobile, default config) on page after page from one Node process, with a fresh browser
    for each page (scripts/lighthouse.mjs): the command line tool started Node and Lighthouse for each
    page too, about 4 s of a chapter's 15 s. Use as a context manager; ``run`` audits one url."""

    def __init__(self, timeout: float = 300):
        if not (ROOT / "node_modules" / "lighthouse").is_dir():
            raise RuntimeError("node_modules/lighthouse is missing: run `make setup` (npm ci installs Lighthouse)")
        self.timeout = timeout
        # its messages, in a file (a pipe nobody reads could fill and stop it); closed in __exit__
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.proc = subprocess.Popen(["node", str(RUNNER)], cwd=ROOT, env=dict(os.environ, CHROME_PATH=CHROMIUM),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)

    def run(self, url: str, out: pathlib.Path, *, multiplier: float | None = None) -> dict:
        """Audit url; return its report (also written to out). With multiplier, the CPU slowdown."""
        job = {"url": url, "out": str(out)} | ({} if multiplier is None else {"multiplier": round(multiplier, 2)})
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not ready or not line:
            self.close()
            why = f"ran past {self.timeout:.0f} s" if not ready else f"stopped (exit {self.proc.returncode})"
            self.log.seek(0)
            raise RuntimeError(f"lighthouse {why} on {url}:\n{self.log.read()[-3000:]}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"lighthouse failed on {url}:\n{answer['error'][-3000:]}")
        return json.loads(out.read_text())

    def close(self) -> None:
        """End the runner; it closes its Chromium (SIGINT if it does not end: chrome-launcher then closes
        the browser, which it started in a process group of its own that killing Node would leave running)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        self.log.close()


def summary(report: dict) -> dict:
    """The numbers the issue asks for, from one Lighthouse report."""
    audits = report["audits"]
    row = {c: round(report["categories"][c]["score"] * 100) for c in CATEGORIES}
    row.update(
        LCP_ms=round(audits["largest-contentful-paint"]["numericValue"]),
        TBT_ms=round(audits["total-blocking-time"]["numericValue"]),
        CLS=round(audits["cumulative-layout-shift"]["numericValue"], 3),
        FCP_ms=round(audits["first-contentful-paint"]["numericValue"]),
        DOM=round(audits["dom-size"].get("numericValue", 0)),
        bytes=round(audits["total-byte-weight"]["numericValue"]),
        benchmarkIndex=round(report["environment"]["benchmarkIndex"]),
        cpuSlowdown=report["configSettings"]["throttling"]["cpuSlowdownMultiplier"],
        failing=sorted(k for c in CATEGORIES[1:] for ref in report["categories"][c]["auditRefs"]
                       if ref["weight"] and (audits[ref["id"]].get("score") is not None)
                       and audits[ref["id"]]["score"] < 1 for k in [ref["id"]]),
    )
    return row


def audit(site: pathlib.Path, pages: list[str], *, calibrate: bool = False, keep: pathlib.Path | None = None,
          echo=print) -> dict[str, dict]:
    """Serve site like GitHub Pages and audit each page; return {page: summary}."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import serve_like_pages

    server, base = serve_like_pages(site)
    rows = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = keep or pathlib.Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            with Lighthouse() as lighthouse:
                for page in pages:
                    out = folder / (page.replace("/", "_") + ".json")
                    report = lighthouse.run(f"{base}/{page}", out)
                    # Lighthouse measures the machine (BenchmarkIndex) just before it loads the page: a run
                    # on a machine slower than the profile assumes is run again, slowed down less
                    multiplier = cpu_multiplier(report["environment"]["benchmarkIndex"])
                    if calibrate and multiplier < DEFAULT_MULTIPLIER:
                        report = lighthouse.run(f"{base}/{page}", out, multiplier=multiplier)
                    rows[page] = summary(report)
                    echo(format_row(page, rows[page]))
    finally:
        server.shutdown()
    return rows


HEADER = f"{'page':34} perf a11y  bp  seo    LCP    TBT   CLS    DOM    bytes  bench  cpu"


def format_row(page: str, r: dict) -> str:
    return (f"{page:34} {r['performance']:4} {r['accessibility']:4} {r['best-practices']:3} {r['seo']:4} "
            f"{r['LCP_ms'] / 1000:5.2f}s {r['TBT_ms']:5}ms {r['CLS']:5.3f} {r['DOM']:6} {r['bytes']:8} "
            f"{r['benchmarkIndex']:6} {r['cpuSlowdown']:4.2f}" + (f"  fails: {' '.join(r['failing'])}" if r["failing"] else ""))


def main(argv: list[str]) -> int:
    calibrate = "--calibrate" in argv
    argv = [a for a in argv if a != "--calibrate"]
    out = None
    if "--json" in argv:
        i = argv.index("--json")
        out = pathlib.Path(argv[i + 1])
        del argv[i:i + 2]
    site = pathlib.Path(argv[0]) if argv else ROOT / "_build" / "html"
    if not (site / "index.html").exists():
        print(f"{site}/index.html is missing: build the site first (make book)", file=sys.stderr)
        return 1
    pages = argv[1:] or SAMPLE
    print(HEADER, flush=True)
    out = out or site.parent / "lighthouse.json"
    reports = out.parent / (out.stem + "-reports")  # each page's whole Lighthouse report
    rows = audit(site.resolve(), pages, calibrate=calibrate, keep=reports, echo=lambda line: print(line, flush=True))
    out.write_text(json.dumps(rows, indent=1))
    print(f"written: {out} (the reports: {reports}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
