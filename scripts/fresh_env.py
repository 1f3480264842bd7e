"""Run every chapter as a Colab reader would: a fresh virtual environment with only `attn`.

    python scripts/fresh_env.py [--keep DIR] [book/x.ipynb ...]

1. Creates a new virtual environment in a temporary folder (no access to the project's .venv).
2. Installs what the Colab set-up cell installs: `attn` from a copy of this clone's files (not
   editable, no extras), plus `ipykernel` to run notebooks, plus the packages Colab already has
   that a chapter asks for with `attn.notebook.require(...)` (e.g. transformers). Versions come
   from requirements.txt (as constraints), so the run is reproducible offline.
3. Checks the installed package: not the source tree, carries the widgets' JS and CSS, and none
   of the book-build packages (myst_nb, sphinx, jupyter_book) is importable.
4. Executes each chapter's reader edition (reader/book/*.ipynb: what Colab and Binder open) top
   to bottom from a temporary folder, two at a time, and reports the time of each.

Exit status 0 when everything ran. `tests/test_fresh_env.py` runs this (marker `fresh_env`).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import notebooks  # noqa: E402
import reader  # noqa: E402

BUILD_PACKAGES = ("myst_nb", "sphinx", "jupyter_book", "nbval")
REQUIRE_CALL = re.compile(r"""require\(\s*["'](?P<name>[\w.]+)["'](?:[^)]*?pip\s*=\s*["'](?P<pip>[\w.\[\]-]+)["'])?""")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def clean_env(**extra) -> dict[str, str]:
    """The environment for the fresh interpreter: nothing that points back at the project."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "JUPYTER_PATH"}}
    env.update(ATTN_QUIET="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg", **extra)
    return env


def chapter_requirements(paths: list[pathlib.Path]) -> list[str]:
    """The packages the chapters ask for with attn.notebook.require(...), as pip names."""
    names: set[str] = set()
    for path in paths:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                for m in REQUIRE_CALL.finditer("".join(cell["source"])):
                    names.add(m.group("pip") or m.group("name"))
    return sorted(names)


def copy_clone(dest: pathlib.Path) -> pathlib.Path:
    """The files a `git clone` of this working tree has (tracked and untracked, not ignored)."""
    files = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def create(work: pathlib.Path, paths: list[pathlib.Path]) -> pathlib.Path:
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    clone = copy_clone(work / "clone")
    extras = chapter_requirements(paths)
    _run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-c", str(ROOT / "requirements.txt"),
          str(clone), "ipykernel", *extras], env=clean_env(), cwd=work)
    return py


CHECK_INSTALL = r"""
import importlib.util, json, pathlib, sys
import attn, attn.widgets
pkg = pathlib.Path(attn.__file__).parent
assets = sorted(p.name for p in (pkg / "widgets").iterdir() if p.suffix in {".js", ".css"})
print(json.dumps({"file": attn.__file__, "prefix": sys.prefix, "assets": assets,
                  "build_packages": [m for m in sys.argv[1:] if importlib.util.find_spec(m)]}))
"""


def check_install(py: pathlib.Path, work: pathlib.Path) -> dict:
    out = _run([str(py), "-c", CHECK_INSTALL, *BUILD_PACKAGES], env=clean_env(), cwd=work).stdout
    info = json.loads(out.strip().splitlines()[-1])
    expected = sorted(p.name for p in (ROOT / "src/attn/widgets").iterdir() if p.suffix in {".js", ".css"})
    problems = []
    if not info["file"].startswith(info["prefix"]) or "site-packages" not in info["file"]:
        problems.append(f"attn is not installed in the fresh environment: imported from {info['file']}")
    if info["assets"] != expected:
        problems.append(f"installed widget assets {info['assets']} differ from src/attn/widgets {expected}")
    if info["build_packages"]:
        problems.append(f"book-build packages are importable in the fresh environment: {info['build_packages']}")
    info["problems"] = problems
    return info


def kernelspec(py: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    home = work / "jupyter"
    spec = home / "kernels" / "attn-fresh"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "attn (fresh environment)", "language": "python",
    }))
    return home


def execute(paths: list[pathlib.Path], py: pathlib.Path, work: pathlib.Path, jobs: int = 2) -> dict[str, dict]:
    """Run each reader edition with the fresh kernel, `jobs` at a time; name -> {ok, seconds, log}."""
    home = kernelspec(py, work)
    runner = pathlib.Path(sys.executable).parent / "jupyter-execute"
    rundir = work / "run"
    rundir.mkdir()
    pending = []
    for path in paths:
        edition = reader.reader_path(path)
        shutil.copy2(edition, rundir / edition.name)
        pending.append(edition.name)
    results: dict[str, dict] = {}
    running: list[tuple[str, subprocess.Popen, float, pathlib.Path]] = []
    env = clean_env(JUPYTER_PATH=str(home))
    while pending or running:
        while pending and len(running) < jobs:
            name = pending.pop(0)
            log = work / f"{name}.log"
            cmd = [str(runner), "--kernel_name=attn-fresh", "--timeout=600", name]
            proc = subprocess.Popen(cmd, cwd=rundir, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
            running.append((name, proc, time.perf_counter(), log))
        time.sleep(0.5)
        for item in list(running):
            name, proc, start, log = item
            if proc.poll() is not None:
                running.remove(item)
                results[name] = {"ok": proc.returncode == 0, "seconds": time.perf_counter() - start,
                                 "log": log.read_text()[-4000:]}
    return results


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="use this folder and keep it (default: a temporary folder)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args(argv)
    paths = [ROOT / p for p in args.chapters] or notebooks.chapters()
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="attn-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    py = create(work, paths)
    print(f"fresh environment ready in {time.perf_counter() - start:.0f} s")
    info = check_install(py, work)
    for p in info["problems"]:
        print("PROBLEM:", p)
    results = execute(paths, py, work)
    for name, r in results.items():
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {name:36s} {r['seconds']:6.1f} s")
        if not r["ok"]:
            print(r["log"])
    print(f"total {time.perf_counter() - start:.0f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not info["problems"] and all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
