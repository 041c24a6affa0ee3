"""Start-up: `aicr-pytest validate --no-cluster` on the example recipe against the import floor.

Issue #17 item 10: the whole process (the installed ``aicr-pytest`` script) has a median ≤ 0.6 s on
the 2-core dev machine and at most 3× ``python -c "import pytest, yaml, pydantic"`` measured in the
same run.  The two commands alternate (so machine load hits both alike); printed: every run, both
medians (wall, and CPU time, which a loaded machine inflates less), the ratio, the load average
before and after, and the top import costs of one validate run (``-X importtime``, cumulative).

The product is byte-compiled first (``compileall`` over ``aicr_pytest`` and ``checks``), as pip does
when it installs the wheel: an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (this machine's
environment) would otherwise compile every changed module from source on every run, a cost no
installed copy pays. ``--as-is`` measures the checkout without that step.

    .venv/bin/python benchmarks/bench_startup.py [RUNS] [--top N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
TARGET_S = 0.6
TARGET_RATIO = 3.0


def validate_cmd(python: str) -> list[str]:
    script = Path(python).with_name("aicr-pytest")
    head = [str(script)] if script.exists() else [python, "-m", "aicr_pytest.cli"]
    return [
        *head,
        "validate",
        "--recipe",
        str(RECIPE),
        "--snapshot",
        str(SNAPSHOT),
        "--no-cluster",
        "-o",
        "/dev/null",
    ]


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], cwd: str) -> float:
    """Wall seconds of one run; its CPU seconds (user + system) go to :data:`CPU`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    CPU.setdefault(cmd[-1] if cmd[1] == "-c" else "validate", []).append(cpu)
    return elapsed


def import_costs(cmd: list[str], cwd: str, top: int) -> list[tuple[int, int, str]]:
    """(cumulative µs, self µs, module) of the ``top`` costliest imports of one run."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    # -s: pytest's fd capture would swallow the lines of the imports made while collecting
    proc = subprocess.run([*cmd, "--", "-s"], capture_output=True, text=True, check=False, cwd=cwd, env=env)
    rows: list[tuple[int, int, str]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        rows.append((int(cumulative), int(self_us), name))
    rows.sort(reverse=True)
    return rows[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=9)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--as-is", action="store_true", help="do not byte-compile the product first")
    args = parser.parse_args()
    if not args.as_is:
        for tree in (REPO / "aicr_pytest", REPO / "checks"):
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(tree)], check=True, stdout=subprocess.DEVNULL
            )
    print(f"bytecode: {'as the checkout has it' if args.as_is else 'compiled first, as pip install does'}")
    validate = validate_cmd(sys.executable)
    floor = [sys.executable, "-c", "import pytest, yaml, pydantic"]
    load_before = os.getloadavg()
    ours: list[float] = []
    base: list[float] = []
    with tempfile.TemporaryDirectory() as cwd:
        timed(validate, cwd)  # warm the page cache and the bytecode
        timed(floor, cwd)
        for i in range(args.runs):
            ours.append(timed(validate, cwd))
            base.append(timed(floor, cwd))
            print(f"run {i + 1}: validate --no-cluster {ours[-1]:.3f} s   import floor {base[-1]:.3f} s")
        costs = import_costs(validate, cwd, args.top)
    load_after = os.getloadavg()
    m_ours, m_base = statistics.median(ours), statistics.median(base)
    ratio = m_ours / m_base
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}  (cores: {os.cpu_count()})")
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in load_after)}")
    print(f"median validate --no-cluster: {m_ours:.3f} s (target <= {TARGET_S} s)")
    print(f'median python -c "import pytest, yaml, pydantic": {m_base:.3f} s')
    print(f"ratio: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
    cpu_ours = statistics.median(CPU["validate"][1:])  # the warm-up run not counted
    cpu_base = statistics.median(CPU[floor[-1]][1:])
    print(
        f"median CPU time (user+sys; steadier than wall on a loaded machine): validate {cpu_ours:.3f} s, "
        f"import floor {cpu_base:.3f} s, ratio {cpu_ours / cpu_base:.2f}x"
    )
    print(f"top {len(costs)} imports by cumulative time (one run, -X importtime):")
    for cumulative, self_us, name in costs:
        print(f"  {cumulative / 1000:8.1f} ms cumulative {self_us / 1000:7.1f} ms self  {name.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
