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
3. Checks the installed package: not the source tree, carries its data files (the widgets' JS and
   CSS, the checkpoints, the English text, and benchmarks/measured/ as attn/book/measured/), and
   none of the book-build packages (myst_nb, sphinx, jupyter_book, nbval) is importable.
4. Runs each chapter's reader edition (reader/book/*.ipynb: what Colab and Binder open) top to
   bottom with `pytest --nbval-lax` (pytest from the project, the kernel from the fresh environment,
   two chapters at a time); with --nbval, `pytest --nbval`, which also compares each stored output.
   Each failing or differing cell is listed.

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
from uv import find_uv_bin

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
    env.update(ATTN_QUIET="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
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


def create(work: pathlib.Path, paths: list[pathlib.Path], *, python: str | None = None,
           newest: bool = False) -> pathlib.Path:
    """A new environment in work/venv with attn from a copy of this clone: the lock's versions, or
    with `newest` the newest releases the indexes serve. Returns its interpreter."""
    venv = work / "venv"
    base = python or getattr(sys, "_base_executable", sys.executable)
    _run([find_uv_bin(), "venv", "--quiet", "--python", base, str(venv)], env=clean_env())
    py = venv / "bin" / "python"
    clone = copy_clone(work / "clone")
    extras = chapter_requirements(paths)
    pins = ["--upgrade"] if newest else ["--constraint", str(ROOT / "requirements.txt")]
    _run([find_uv_bin(), "pip", "install", "--quiet", "--python", str(py), *pip_index_args(), *pins,
          str(clone), "ipykernel", *extras], env=clean_env(), cwd=work)
    return py


def versions(py: pathlib.Path, names=("torch", "numpy", "transformers")) -> dict[str, str]:
    """The installed versions of `names` (and Python's) in the environment of `py` ("absent" where a
    chapter run did not need to install it)."""
    code = ("import importlib.metadata as m, importlib.util as u, json, platform; "
            "v = lambda n: m.version(n) if u.find_spec(n) else 'absent'; "
            f"print(json.dumps({{'python': platform.python_version(), **{{n: v(n) for n in {list(names)!r}}}}}))")
    return json.loads(_run([str(py), "-c", code], env=clean_env()).stdout.strip().splitlines()[-1])


# The data files the package must carry (pyproject.toml's package-data, and benchmarks/measured/,
# which setup.py copies in): folder of attn/book -> the folder whose files (all but Python's) it must hold.
DATA = {"widgets": ROOT / "src/attn/book/widgets", "checkpoints": ROOT / "src/attn/book/checkpoints",
        "texts": ROOT / "src/attn/book/texts", "measured": ROOT / "benchmarks/measured"}
CHECK_INSTALL = ("import importlib.util, json, sys, attn, attn.book.widgets; print(json.dumps({'file': attn.__file__, "
                 "'prefix': sys.prefix, 'build_packages': [m for m in sys.argv[1:] if importlib.util.find_spec(m)]}))")


def data_files(folder: pathlib.Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*") if p.is_file() and p.suffix not in {".py", ".pyc"})


def check_install(py: pathlib.Path, work: pathlib.Path) -> dict:
    """What the fresh environment's `attn` is: {file, prefix, build_packages, data, problems}."""
    out = _run([str(py), "-c", CHECK_INSTALL, *BUILD_PACKAGES], env=clean_env(), cwd=work).stdout
    info = json.loads(out.strip().splitlines()[-1])
    problems = []
    if not info["file"].startswith(info["prefix"]) or "site-packages" not in info["file"]:
        problems.append(f"attn is not installed in the fresh environment: imported from {info['file']}")
    book = pathlib.Path(info["file"]).parent / "book"
    info["data"] = {name: data_files(book / name) for name in DATA}
    for name, source in DATA.items():
        if info["data"][name] != data_files(source):
            problems.append(f"installed attn/book/{name} {info['data'][name]} differs from {source.relative_to(ROOT)} "
                            f"{data_files(source)}")
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


def run_chapters(paths: list[pathlib.Path], py: pathlib.Path, work: pathlib.Path, *, compare: bool = True,
                 jobs: int = 2) -> dict:
    """The reader editions of `paths` under pytest with nbval, the kernel from the fresh environment
    (`jobs` chapters at a time): every cell runs top to bottom, and with `compare` each stored output
    is compared (`--nbval`, else `--nbval-lax`). Returns nbval_runs.run's {ok, seconds, cells, log}."""
    home = kernelspec(py, work, env=CACHE_BYTECODE)
    rundir = work / "nbval"
    rundir.mkdir(parents=True, exist_ok=True)
    for path in paths:
        shutil.copy2(reader.reader_path(path), rundir / path.name)
    # no MPLBACKEND: the kernel's inline backend shows the figures, whose text/plain nbval compares
    return nbval_runs.run([p.name for p in paths], env=clean_env(JUPYTER_PATH=str(home)), cwd=rundir, jobs=jobs,
                          kernel=KERNEL_NAME, lax=not compare)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="use this folder and keep it (default: a temporary folder)")
    ap.add_argument("--python", help="the interpreter to base the environment on (default: this one's)")
    ap.add_argument("--newest", action="store_true", help="the newest releases the indexes serve, not the lock")
    ap.add_argument("--nbval", action="store_true", help="compare each stored output too (pytest --nbval, not --nbval-lax)")
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
    result = run_chapters(paths, py, work, compare=args.nbval, jobs=args.jobs)
    print(f"pytest {'--nbval' if args.nbval else '--nbval-lax'} on {len(paths)} reader editions: "
          f"{'passed' if result['ok'] else 'FAILED'} in {result['seconds']:.0f} s, {len(result['cells'])} failing cell(s)")
    for name, diff in result["cells"].items():
        print(f"== {name}\n{diff}\n")
    if not result["ok"] and not result["cells"]:
        print(result["log"])
    print(f"total {time.perf_counter() - start:.0f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not info["problems"] and result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
