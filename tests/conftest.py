import contextlib
import os
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Notebook kernels started by nbval inherit this: training loops keep their progress bars quiet,
# as they were when the stored outputs were made.
os.environ.setdefault("ATTN_QUIET", "1")
# Parallel workers (make test, make unit: one more than the cores) compute with one thread each: with
# torch's default of one per core, the workers' thread pools outnumber the cores, and a thread waiting
# at a pool's barrier spins while the thread it waits for is off the CPU (make unit on two cores: 197
# -> 142 CPU-s, 102 -> 75 s). The chapters set their own count; tests of several threads set it themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)



def pytest_addoption(parser):
    parser.addoption("--fresh-env", action="store_true",
                     help="also run the chapters in a fresh environment with only attn installed (slow; make test does)")


SITE_FIXTURES = {"built_site", "browser", "site_server", "watch"}
FRESH_ENV = "ATTN_FRESH_ENV"  # the folder of this run's fresh environment, for the xdist workers


def pytest_configure(config):
    """With --fresh-env, the first thing the run does (in the controller, before any worker starts)
    is to create a fresh environment with only `attn` installed, as a reader's (scripts/fresh_env.py;
    seconds, from uv's cache). With --nbval too, the chapters run there, once: nbval starts their
    kernels from it (`attn-fresh`, found through JUPYTER_PATH) and compares every stored output,
    so the run that checks the outputs is also the run that proves a reader's install runs them.
    The workers inherit the environment variables and so use the same kernel."""
    if config.getoption("--fresh-env") and FRESH_ENV not in os.environ:
        import tempfile

        from scripts import fresh_env, notebooks  # only here: scripts/mutate.py runs the tests without scripts/

        work = pathlib.Path(tempfile.mkdtemp(prefix="attn-fresh-"))
        config._attn_fresh_work = work
        py = fresh_env.create(work, notebooks.chapters())
        os.environ["JUPYTER_PATH"] = str(fresh_env.kernelspec(py, work, env=fresh_env.KERNEL_ENV))
        os.environ[FRESH_ENV] = str(work)
    if os.environ.get(FRESH_ENV) and config.pluginmanager.hasplugin("nbval") and config.getoption("--nbval", False):
        from scripts import fresh_env

        config.option.nbval_current_env = False
        config.option.nbval_kernel_name = fresh_env.KERNEL_NAME


def pytest_unconfigure(config):
    work = getattr(config, "_attn_fresh_work", None)
    if work is not None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
        os.environ.pop(FRESH_ENV, None)


def pytest_collection_modifyitems(config, items):
    """Markers from what a test needs: `site` (builds the book), `browser` (Chromium), `slow` (both,
    and every notebook collected by --nbval). `make unit` deselects `slow`. Tests marked
    `fresh_env` run only with --fresh-env (make test passes it).

    For parallel runs (`pytest -n JOBS --dist loadfile --no-loadscope-reorder`, as `make test` does:
    each file, so each notebook with its one kernel, stays on one worker) the files are ordered
    longest first: the fresh environment, the files with site or browser tests, the notebooks by
    number of cells, then the rest; so that no long file starts last while the other worker idles.
    (pytest-xdist's `loadgroup` cannot be used: with pytest 9.2 its group suffix is lost.)"""
    fresh = config.getoption("--fresh-env")
    skip = pytest.mark.skip(reason="needs --fresh-env (make test passes it)")
    cells: dict[str, int] = {}
    for item in items:
        cells[str(item.path)] = cells.get(str(item.path), 0) + 1
    rank: dict[str, tuple] = {}
    for i, item in enumerate(items):
        needs = set(getattr(item, "fixturenames", ()))
        if "built_site" in needs:
            item.add_marker(pytest.mark.site)
        if "browser" in needs:
            item.add_marker(pytest.mark.browser)
        if needs & {"built_site", "browser"} or item.path.suffix == ".ipynb" or "fresh_env" in item.keywords:
            item.add_marker(pytest.mark.slow)
        if "fresh_env" in item.keywords and not fresh:
            item.add_marker(skip)
        key = str(item.path)
        if "fresh_env" in item.keywords:
            order = (0, 0)
        elif needs & SITE_FIXTURES:
            order = (1, 0)
        elif item.path.suffix == ".ipynb":
            order = (2, -cells[key])
        else:
            order = (3, 0)
        rank[key] = min(rank.get(key, (9, 0, i)), (*order, i))
    first = {}
    for i, item in enumerate(items):
        first.setdefault(str(item.path), i)
    items.sort(key=lambda item: (*rank[str(item.path)][:2], first[str(item.path)]))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> pathlib.Path:
    """Build the book once per test run, warnings as errors, into a temporary folder. With parallel
    workers (pytest-xdist) the first worker that needs it builds it under a file lock into the
    run's shared temporary folder, and the others wait for that build and use it. Both editions:
    English at the root, Chinese under zh/ (scripts/site.py, as `make book`)."""
    from filelock import FileLock

    if not (ROOT / "_assets" / ".installed").exists():
        pytest.fail("_assets/ is missing: run `make setup` (or `make test`) to fetch the site's front-end files")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of this run
    out = base / "site"
    html = out / "_build" / "html"
    failed = base / "site-build-failed.txt"
    with FileLock(str(base / "site.lock")):
        if failed.exists():
            pytest.fail(failed.read_text())
        if (html / ".build-log.txt").exists():
            return html
        from scripts import site

        try:
            built, log = site.build(out, timeout=600)
        except site.BuildError as e:
            failed.write_text(str(e))
            pytest.fail(failed.read_text())
        assert built == html
        (html / ".build-log.txt").write_text(log)
    return html


# Debian's Chromium; elsewhere (macOS, the CI matrix) ATTN_CHROMIUM names another Chromium build.
CHROMIUM = os.environ.get("ATTN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
    "--disable-background-networking", "--disable-component-update",
    # no host name but the local server's resolves: a request to another host fails at once, and
    # PageWatch records it (without intercepting every request, which cost a round trip each)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]


SITE_PREFIX = "/attn-book"  # where GitHub Pages serves the book (see _config.yml notfound_urls_prefix)
COMPRESSIBLE = {".html", ".js", ".css", ".json", ".svg", ".txt", ".ipynb", ".inv", ".xml", ".map", ".ttf", ".otf", ".eot"}


@pytest.fixture(scope="session")
def site_server(built_site):
    """The built site served on 127.0.0.1 as GitHub Pages serves it (see serve_like_pages)."""
    server, base = serve_like_pages(built_site)
    yield base
    server.shutdown()


def serve_like_pages(built_site: pathlib.Path, prefix: str = SITE_PREFIX):
    """Serve the built site on 127.0.0.1 the way GitHub Pages does: under ``prefix`` (/attn-book/; ""
    for a host's root, as a custom domain or a local server serves it), gzip for text files when the
    browser accepts it, and 404.html (status 404) for a missing page.
    Returns the running server and the site's base URL."""
    import gzip
    import http.server
    import mimetypes
    import threading
    import urllib.parse

    # Each file is compressed once per version (many pages load the same scripts and style sheets;
    # a page is written into the site by some tests, hence the version in the key).
    compressed: dict[tuple, bytes] = {}

    class Pages(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            status, file = 404, built_site / "404.html"
            if path.startswith(prefix + "/") or path == prefix:
                rel = path[len(prefix):].lstrip("/")
                target = (built_site / rel).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if target.is_file() and built_site.resolve() in target.parents:
                    status, file = 200, target
            st = file.stat()  # before reading: a file rewritten meanwhile is compressed again next time
            body = file.read_bytes()
            kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            if file.suffix in COMPRESSIBLE and "gzip" in self.headers.get("Accept-Encoding", ""):
                key = (str(file), st.st_mtime_ns, st.st_size)
                if key not in compressed:
                    compressed[key] = gzip.compress(body, 6)
                body = compressed[key]
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # the browser may go away first (a page left, or closed, while it loaded)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}{prefix}"


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright; skipped (with the install command) where absent."""
    if not pathlib.Path(CHROMIUM).exists():
        if __import__("os").environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing in CI: .ci/run must install it (apt-get install -y chromium)")
        pytest.skip(f"browser tests need Debian's Chromium at {CHROMIUM}: apt-get update && apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def widget_page_html(widgets, lang: str | None = None) -> str:
    """A page as myst-nb writes one: the widgets' saved state, a view tag per widget, the site's runtime
    (served as /runtime.js); ``lang`` is the page's ``<html lang>`` (none when None)."""
    import json

    state = {}
    for n, w in enumerate(widgets):
        st = w.get_state()
        state[f"w{n}"] = {"model_module": "anywidget", "model_name": "AnyModel",
                          "state": {k: v for k, v in st.items() if k not in ("layout", "tabbable", "tooltip")}}
    views = "".join(f'<div class="cell"><script type="application/vnd.jupyter.widget-view+json">{{"model_id": "w{n}"}}'
                    "</script></div>" for n in range(len(widgets)))
    saved = json.dumps({"state": state}).replace("</", "<\\/")
    html_lang = f' lang="{lang}"' if lang else ""
    return (f'<!doctype html><html{html_lang}><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
            f'<script type="application/vnd.jupyter.widget-state+json">{saved}'
            '</script><script type="module" src="/runtime.js"></script></head>'
            f'<body style="margin:0 8px">{views}</body></html>')


@pytest.fixture
def widget_page(browser):
    """open(widgets, lang=None, width=1000) -> a page showing the explorers through the site's runtime
    (src/attn/book/widgets/static_runtime.js), as widget_page_html writes it; every page must end with
    no page or console error and no request other than the page and the runtime."""
    runtime = (ROOT / "src" / "attn" / "book" / "widgets" / "static_runtime.js").read_text()
    opened = []

    def open_(widgets, lang=None, width=1000):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.errors, page.offhost = [], []
        page.on("console", lambda m: m.type in ("error", "warning") and page.errors.append(m.text))
        page.on("pageerror", lambda e: page.errors.append(f"pageerror: {e}"))
        html = widget_page_html(widgets, lang)

        def serve(route):
            url = route.request.url
            if url == "http://attn.test/page.html":
                route.fulfill(body=html, content_type="text/html")
            elif url == "http://attn.test/runtime.js":
                route.fulfill(body=runtime, content_type="text/javascript")
            else:
                page.offhost.append(url)
                route.abort()

        page.route("**/*", serve)
        page.goto("http://attn.test/page.html")
        page.wait_for_function("() => window.attnWidgets !== undefined", timeout=30_000)
        opened.append((context, page))
        return page

    yield open_
    for context, page in opened:
        errors, offhost = page.errors, page.offhost
        context.close()
        assert errors == [] and offhost == [], (errors, offhost)


class PageWatch:
    """A page whose off-host requests are recorded (they fail: CHROMIUM_ARGS lets no other host name
    resolve), with console errors (and, apart, console warnings) collected.
    ``context_options`` go to Playwright's ``new_context`` (a phone's viewport, touch); a 1280 x 900
    desktop window by default."""

    def __init__(self, browser, base: str, **context_options):
        self.base = base
        self.context = browser.new_context(**({"viewport": {"width": 1280, "height": 900}} | context_options))
        self.page = self.context.new_page()
        self.offhost: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.requests: list[str] = []
        self.page.on("request", self._request)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("console", lambda m: m.type == "warning" and self.warnings.append(f"console: {m.text}"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))

    def _request(self, request):
        url = request.url
        self.requests.append(url)
        if not url.startswith((self.base, "data:", "blob:")):
            self.offhost.append(url)

    def goto(self, path: str):
        self.page.goto(f"{self.base}/{path}", wait_until="networkidle")
        return self.page

    def open_folds(self) -> int:
        """Open every closed fold of the article (a hidden cell's code, an optional section, a dropdown), as a
        reader who opens them all: closed, their content is not displayed (_css/attn.css), so a check of what
        the page shows measures it only once they are open. Returns how many were opened."""
        return self.page.evaluate("""() => { const folds = document.querySelectorAll('.bd-article details:not([open])');
          folds.forEach((d) => { d.open = true; }); return folds.length; }""")

    def close(self):
        self.context.close()


@pytest.fixture(scope="session")
def desktop_walk(built_site, browser, site_server):
    """walk(lang) -> the records of the one pass over every page of an edition ("en", "zh") at a desktop's width
    (tests/test_browser.py walk_at_desktop_width), walked once per worker: the tests that read an edition's
    records (its loads, axe's findings, the Chinese pages' English) sit in one file, so on one worker."""
    from test_browser import walk_at_desktop_width

    walks: dict[str, dict | Exception] = {}

    def walk(lang: str) -> dict[str, dict]:
        if lang not in walks:
            try:
                walks[lang] = walk_at_desktop_width(built_site, browser, site_server, lang)
            except Exception as e:  # every test of the edition fails with it, none walks again
                walks[lang] = e
        if isinstance(walks[lang], Exception):
            raise walks[lang]
        return walks[lang]

    return walk


@pytest.fixture
def watch(browser, site_server):
    w = PageWatch(browser, site_server)
    yield w
    w.close()
