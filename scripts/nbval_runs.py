"""`pytest --nbval` on the chapters outside `make test`: under simulated other CPUs.

    python -m scripts.nbval_runs [--jobs N] [--native] [book/x.ipynb ...]   # make test-cpus

The stored outputs must not depend on the machine that computed them. One machine can compute
as others do: ATen, MKL and oneDNN pick their kernels from environment variables. Each
configuration runs every chapter with nbval (`-n N --dist loadfile`: N notebooks at a time, each
on one kernel) and the differing cells are listed:

- `avx2`:    ATEN_CPU_CAPABILITY=avx2, MKL_ENABLE_INSTRUCTIONS=AVX2, DNNL_MAX_CPU_ISA=AVX2 (a laptop);
- `default`: ATEN_CPU_CAPABILITY=default, no SIMD kernels (a proxy for other architectures);
- `native`:  what the CPU has (AVX-512 where present); `make test` already runs it, so only with --native;
- `threads`: the chapters that do not fix their own thread count (`torch.set_num_threads` in a
  code cell), with another count than this machine's default (1, or 2 where the default is 1).

Exit status 0 when every configuration passes. `fresh_env.py` runs the chapters with `run` too.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from scripts import notebooks

ROOT = pathlib.Path(__file__).resolve().parents[1]

AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2"}
NO_SIMD = {"ATEN_CPU_CAPABILITY": "default"}
SANITIZE = pathlib.Path("tests") / "nbval_sanitize.cfg"  # the same as pyproject.toml's addopts
SETS_THREADS = re.compile(r"^\s*torch\.set_num_threads\(", re.M)


def run(paths: list[pathlib.Path | str], *, env: dict[str, str], cwd: pathlib.Path, jobs: int = 2,
        kernel: str | None = None, lax: bool = False) -> dict:
    """pytest --nbval on `paths` (relative to `cwd`), `jobs` notebooks at a time, with `env`, and the
    kernel `kernel` (default: this environment's); with `lax`, --nbval-lax (every cell runs, no output
    is compared). Returns {ok, seconds, cells, log}; `cells` maps "chapter.ipynb::Cell N" to the first
    lines of its difference or error."""
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "nbval.xml"
        # addopts are the project's (--nbval-current-env); the sanitizers for measured times are kept
        sanitize = cwd / SANITIZE if (cwd / SANITIZE).exists() else ROOT / SANITIZE
        cmd = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
               "--nbval-lax" if lax else "--nbval",
               f"--nbval-sanitize-with={sanitize}", f"--junitxml={report}", "--rootdir", str(cwd), *map(str, paths)]
        cmd += ["--nbval-kernel-name", kernel] if kernel else ["--nbval-current-env"]
        if jobs > 1:
            cmd += ["-n", str(jobs), "--dist", "loadfile"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        cells = {}
        if report.exists():
            for case in ET.parse(report).iter("testcase"):
                for bad in [*case.iter("failure"), *case.iter("error")]:
                    name = case.get("classname", "").rsplit(".", 1)[0].rsplit(".", 1)[-1] + ".ipynb::" + case.get("name", "")
                    cells[name] = difference(bad.text or bad.get("message") or "")
    return {"ok": proc.returncode == 0, "seconds": seconds, "cells": cells, "log": (proc.stdout + proc.stderr)[-4000:]}


def difference(report: str) -> str:
    """The reason part of nbval's report on a cell (what differs, or the error), without the cell's
    source and colour codes."""
    text = re.sub(r"\x1b\[[0-9;]*m|#x1B\[[0-9;]*m", "", report)
    lines = [line for line in text.splitlines() if line.strip()]
    if "Traceback:" in lines:
        lines = lines[lines.index("Traceback:") + 1:]
    return "\n".join(lines)[:1500]


def own_threads(path: pathlib.Path) -> bool:
    """Whether a code cell of the chapter sets torch's thread count itself."""
    nb = json.loads(path.read_text())
    return any(SETS_THREADS.search("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code")


def capability(env: dict[str, str]) -> tuple[str, int]:
    code = "import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.split()
    return (out[0], int(out[1])) if len(out) == 2 else ("?", 0)


def configurations(paths: list[pathlib.Path], native: bool) -> list[tuple[str, dict[str, str], list[pathlib.Path]]]:
    base = {k: v for k, v in os.environ.items() if k not in {*AVX2, *NO_SIMD, "OMP_NUM_THREADS", "MKL_NUM_THREADS"}}
    # No MPLBACKEND: the kernel's inline backend shows the figures, whose text/plain nbval compares.
    base.pop("MPLBACKEND", None)
    base.update(ATTN_QUIET="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    configs = [("avx2", {**base, **AVX2}, paths), ("default", {**base, **NO_SIMD}, paths)]
    if native:
        configs.append(("native", base, paths))
    free = [p for p in paths if not own_threads(p)]
    if free:
        threads = "2" if capability(base)[1] == 1 else "1"
        configs.append((f"threads={threads}", {**base, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}, free))
    return configs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="notebooks at a time (default: the CPU count)")
    ap.add_argument("--native", action="store_true", help="also the native capability (make test runs it already)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args(argv)
    paths = [ROOT / p for p in args.chapters] or notebooks.chapters()
    failed = []
    start = time.perf_counter()
    for name, env, chosen in configurations(paths, args.native):
        cap, threads = capability(env)
        result = run([p.relative_to(ROOT) for p in chosen], env=env, cwd=ROOT, jobs=args.jobs)
        print(f"{name:10s} (ATen {cap}, {threads} thread(s)), {len(chosen)} chapter(s): "
              f"{'passed' if result['ok'] else 'FAILED'} in {result['seconds']:.0f} s, "
              f"{len(result['cells'])} differing cell(s)", flush=True)
        for cell, diff in result["cells"].items():
            print(f"  == {cell}\n" + "\n".join("     " + line for line in diff.splitlines()[:12]))
        if not result["ok"] and not result["cells"]:
            print(result["log"])
        if not result["ok"]:
            failed.append(name)
    print(f"simulated CPUs: {'all passed' if not failed else 'FAILED: ' + ', '.join(failed)} "
          f"in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
