"""Build the site: the English book at the root, the Chinese edition (zh/) under zh/.

    python -m scripts.site [OUT]     # default: the repository, so the site is _build/html (make book)

Both builds run at once (Jupyter Book, warnings as errors), each from the stored notebook outputs;
the Chinese one, built from zh/ (written by ``python -m scripts.zh build``), is then copied into
``OUT/_build/html/zh/``. The tests build the same way (tests/conftest.py, ``built_site``).
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
EDITIONS = {"en": (ROOT, ""), "zh": (ROOT / "zh", "zh")}  # source folder, place in the site


class BuildError(RuntimeError):
    pass


def build(out: pathlib.Path = ROOT, *, timeout: float = 900) -> tuple[pathlib.Path, str]:
    """Build both editions into ``out/_build/html``; return that folder and the builds' log."""
    jb = pathlib.Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    procs = {}
    for lang, (src, _) in EDITIONS.items():
        dest = out if lang == "en" else out / "_build" / f"edition-{lang}"
        procs[lang] = (dest, subprocess.Popen(
            [str(jb), "build", str(src), "--all", "-W", "-n", "--keep-going", "--path-output", str(dest)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    logs, failed = [], []
    for lang, (_, proc) in procs.items():
        text, _ = proc.communicate(timeout=timeout)
        logs.append(f"==== {lang} edition (exit {proc.returncode})\n{text}")
        if proc.returncode:
            failed.append(f"{lang} (exit {proc.returncode})")
    log = "\n".join(logs)
    if failed:
        # the warnings first (-W makes each one fatal; they scroll by long before the log's end), then its tail
        plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
        problems = "\n".join(line for line in plain.splitlines() if re.search(r"\b(WARNING|ERROR|CRITICAL)\b", line))
        raise BuildError(f"jupyter-book build failed: {', '.join(failed)} after {time.perf_counter() - start:.0f} s:\n"
                         f"{problems[:8000]}\n---- the log's end:\n{plain[-4000:]}")
    html = out / "_build" / "html"
    for lang, (dest, _) in procs.items():
        place = EDITIONS[lang][1]
        if place:
            shutil.rmtree(html / place, ignore_errors=True)
            shutil.copytree(dest / "_build" / "html", html / place)
    return html, log + f"\n==== both editions built in {time.perf_counter() - start:.0f} s\n"


def main(argv: list[str]) -> int:
    out = pathlib.Path(argv[0]).resolve() if argv else ROOT
    try:
        html, log = build(out)
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    print(log[-600:])
    print(f"Built: {html}/index.html (English) and {html}/zh/index.html (中文)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
