"""Run every chapter as a Colab reader would: a fresh virtual environment with only `attn`.

    python -m scripts.fresh_env [--keep DIR] [book/x.ipynb ...]

    python -m scripts.fresh_env --python python3.12 --newest --nbval   # Colab's Python, newest releases

1. Creates a new virtual environment in a temporary folder (no access to the project's .venv), with
   `uv` (pinned in requirements.txt): packages are unpacked once into uv's cache (~/.cache/uv, or
   UV_CACHE_DIR) and linked from there, so a second environment installs torch in seconds. The
   package indexes are the ones pip is configured with (pip's own config and PIP_* variables).
2. Installs what the Colab set-up cell installs: `attn` from a copy of this clone's files (not
   editable, no extras), plus `ipykernel` to run notebooks, plus the packages Colab already has
   that a chapter asks for with `attn.book.notebook.require(...)` (e.g. transformers). Versions come
   from requirements.txt (as constraints), so the run is reproducible offline; with --newest they
   are the newest releases the indexes serve instead (--python picks the interpreter).
3. Checks the installed package: not the source tree, carries the widgets' JS and CSS, and none
   of the book-build packages (myst_nb, sphinx, jupyter_book) is importable.
4. Executes each chapter's reader edition (reader/book/*.ipynb: what Colab and Binder open) top
   to bottom from a temporary folder, two at a time, and reports the time of each. With --nbval,
   the run is `pytest --nbval` on the reader editions instead (pytest from the project, the kernel
   from the fresh environment): every cell runs top to bottom and each stored output is compared;
   each differing cell is listed.

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

from scripts import nbval_runs, notebooks, reader
from scripts.uv_args import pip_index_args

ROOT = pathlib.Path(__file__).resolve().parents[1]

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
    """The packages the chapters ask for with attn.book.notebook.require(...), as pip names."""
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


def uv() -> str:
    exe = pathlib.Path(sys.executable).parent / "uv"
    found = str(exe) if exe.exists() else shutil.which("uv")
    if not found:
        raise RuntimeError("uv is not installed: run `make setup` (it is pinned in requirements.txt)")
    return found


def create(work: pathlib.Path, paths: list[pathlib.Path], *, python: str | None = None,
           newest: bool = False) -> pathlib.Path:
    """A new environment in work/venv with attn from a copy of this clone: the lock's versions, or
    with `newest` the newest releases the indexes serve. Returns its interpreter."""
    venv = work / "venv"
    base = python or getattr(sys, "_base_executable", sys.executable)
    _run([uv(), "venv", "--quiet", "--python", base, str(venv)], env=clean_env())
    py = venv / "bin" / "python"
    clone = copy_clone(work / "clone")
    extras = chapter_requirements(paths)
    pins = ["--upgrade"] if newest else ["--constraint", str(ROOT / "requirements.txt")]
    _run([uv(), "pip", "install", "--quiet", "--python", str(py), *pip_index_args(), *pins,
          str(clone), "ipykernel", *extras], env=clean_env(), cwd=work)
    return py


def versions(py: pathlib.Path, names=("torch", "numpy", "transformers")) -> dict[str, str]:
    """The installed versions of `names` (and Python's) in the environment of `py` ("absent" where a
    chapter run did not need to install it)."""
    code = ("import importlib.metadata as m, importlib.util as u, json, platform; "
            "v = lambda n: m.version(n) if u.find_spec(n) else 'absent'; "
            f"print(json.dumps({{'python': platform.python_version(), **{{n: v(n) for n in {list(names)!r}}}}}))")
    return json.loads(_run([str(py), "-c", code], env=clean_env()).stdout.strip().splitlines()[-1])


CHECK_INSTALL = r"""
import importlib.util, json, pathlib, sys
import attn, attn.book.widgets
pkg = pathlib.Path(attn.__file__).parent / "book"
assets = sorted(p.name for p in (pkg / "widgets").iterdir() if p.suffix in {".js", ".css"})
measured = sorted(p.name for p in (pkg / "measured").glob("*")) if (pkg / "measured").is_dir() else []
print(json.dumps({"file": attn.__file__, "prefix": sys.prefix, "assets": assets, "measured": measured,
                  "build_packages": [m for m in sys.argv[1:] if importlib.util.find_spec(m)]}))
"""


def check_install(py: pathlib.Path, work: pathlib.Path) -> dict:
    out = _run([str(py), "-c", CHECK_INSTALL, *BUILD_PACKAGES], env=clean_env(), cwd=work).stdout
    info = json.loads(out.strip().splitlines()[-1])
    expected = sorted(p.name for p in (ROOT / "src/attn/book/widgets").iterdir() if p.suffix in {".js", ".css"})
    problems = []
    if not info["file"].startswith(info["prefix"]) or "site-packages" not in info["file"]:
        problems.append(f"attn is not installed in the fresh environment: imported from {info['file']}")
    if info["assets"] != expected:
        problems.append(f"installed widget assets {info['assets']} differ from src/attn/book/widgets {expected}")
    shipped = sorted(p.name for p in (ROOT / "benchmarks" / "measured").iterdir())
    if info["measured"] != shipped:  # copied in by setup.py: the chapters read them in Colab
        problems.append(f"installed measurements {info['measured']} differ from benchmarks/measured {shipped}")
    if info["build_packages"]:
        problems.append(f"book-build packages are importable in the fresh environment: {info['build_packages']}")
    info["problems"] = problems
    return info


KERNEL_NAME = "attn-fresh"
# What `make test`'s kernel adds to the environment it inherits: glue writes myst-nb's records, so
# that nbval compares them with the stored ones (attn.book.notebook.glue), and nothing points back at
# the project's packages.
# Every kernel of a fresh environment caches bytecode in it even where PYTHONDONTWRITEBYTECODE is
# set: the first kernels compile what the chapters import, and the others read it (1.6 s of CPU
# less per kernel; compiling the whole environment at install would cost 31 s).
CACHE_BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}
KERNEL_ENV = {"ATTN_GLUE_RECORDS": "1", "PYTHONPATH": "", "PYTHONHOME": "", "ATTN_QUIET": "1",
              "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **CACHE_BYTECODE}


def kernelspec(py: pathlib.Path, work: pathlib.Path, env: dict[str, str] | None = None) -> pathlib.Path:
    """A Jupyter kernel named `attn-fresh` running `py`, in work/jupyter (give it as JUPYTER_PATH);
    `env`: variables the kernel sets on top of the ones it inherits."""
    home = work / "jupyter"
    spec = home / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "attn (fresh environment)", "language": "python", **({"env": env} if env else {}),
    }))
    return home


def _editions(paths: list[pathlib.Path], rundir: pathlib.Path) -> list[str]:
    rundir.mkdir(exist_ok=True)
    names = []
    for path in paths:
        edition = reader.reader_path(path)
        shutil.copy2(edition, rundir / edition.name)
        names.append(edition.name)
    return names


def execute(paths: list[pathlib.Path], py: pathlib.Path, work: pathlib.Path, jobs: int = 2) -> dict[str, dict]:
    """Run each reader edition with the fresh kernel, `jobs` at a time; name -> {ok, seconds, log}."""
    home = kernelspec(py, work, env=CACHE_BYTECODE)
    runner = pathlib.Path(sys.executable).parent / "jupyter-execute"
    rundir = work / "run"
    work.mkdir(parents=True, exist_ok=True)
    pending = _editions(paths, rundir)
    results: dict[str, dict] = {}
    running: list[tuple[str, subprocess.Popen, float, pathlib.Path]] = []
    env = clean_env(JUPYTER_PATH=str(home))
    while pending or running:
        while pending and len(running) < jobs:
            name = pending.pop(0)
            log = work / f"{name}.log"
            cmd = [str(runner), f"--kernel_name={KERNEL_NAME}", "--timeout=600", name]
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


def nbval(paths: list[pathlib.Path], py: pathlib.Path, work: pathlib.Path, jobs: int = 2) -> dict:
    """`pytest --nbval` on the reader editions, pytest from the project and the kernel from the fresh
    environment (`jobs` notebooks at a time): every cell runs top to bottom and each stored output is
    compared. Returns {ok, seconds, cells: {"chapter.ipynb::Cell N": first lines of the difference}, log}."""
    home = kernelspec(py, work, env=CACHE_BYTECODE)
    rundir = work / "nbval"
    names = _editions(paths, rundir)
    env = clean_env(JUPYTER_PATH=str(home))
    del env["MPLBACKEND"]  # the kernel's inline backend shows the figures, whose text/plain nbval compares
    return nbval_runs.run(names, env=env, cwd=rundir, jobs=jobs, kernel=KERNEL_NAME)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="use this folder and keep it (default: a temporary folder)")
    ap.add_argument("--python", help="the interpreter to base the environment on (default: this one's)")
    ap.add_argument("--newest", action="store_true", help="the newest releases the indexes serve, not the lock")
    ap.add_argument("--nbval", action="store_true", help="run pytest --nbval on the reader editions and list each differing cell")
    ap.add_argument("--jobs", type=int, default=2, help="chapters at a time (default 2)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args(argv)
    paths = [ROOT / p for p in args.chapters] or notebooks.chapters()
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="attn-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    py = create(work, paths, python=args.python, newest=args.newest)
    print(f"fresh environment ready in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in versions(py).items()), flush=True)
    info = check_install(py, work)
    for p in info["problems"]:
        print("PROBLEM:", p)
    if args.nbval:
        result = nbval(paths, py, work, jobs=args.jobs)
        print(f"pytest --nbval on {len(paths)} reader editions: {'passed' if result['ok'] else 'FAILED'} "
              f"in {result['seconds']:.0f} s, {len(result['cells'])} differing cell(s)")
        for name, diff in result["cells"].items():
            print(f"== {name}\n{diff}\n")
        if not result["ok"] and not result["cells"]:
            print(result["log"])
        ok = result["ok"]
    else:
        results = execute(paths, py, work, jobs=args.jobs)
        for name, r in results.items():
            print(f"{'ok  ' if r['ok'] else 'FAIL'} {name:36s} {r['seconds']:6.1f} s")
            if not r["ok"]:
                print(r["log"])
        ok = all(r["ok"] for r in results.values())
    print(f"total {time.perf_counter() - start:.0f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not info["problems"] and ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
