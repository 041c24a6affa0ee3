"""Start-up: `aicr-pytest validate --no-cluster` against the import floor, and what an installed
aicr-pytest costs a plain pytest run that does not use it.

1. ``validate``: the whole process (the installed ``aicr-pytest`` script) has a median ≤ 0.6 s on
the 2-core dev machine and at most 3× ``python -c "import pytest, yaml, pydantic"`` measured in the
same run.  The two commands alternate (so machine load hits both alike); printed: every run, both
medians (wall, and CPU time, which a loaded machine inflates less), the ratio, the load average
before and after, and the top import costs of one validate run (``-X importtime``, cumulative).

The product is byte-compiled first (``compileall`` over ``aicr_pytest`` and ``checks``), as pip does
when it installs the wheel: an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (this machine's
environment) would otherwise compile every changed module from source on every run, a cost no
installed copy pays. ``--as-is`` measures the checkout without that step.

2. ``plain``: a one-test project under plain ``pytest`` (no ``--recipe``) with aicr-pytest installed
is within 5 % of the same run with ``-p no:aicr -p no:aicr_testkit`` (the plugin's start-up cost for
a suite that does not use it).  The two commands run in pairs, alternating which goes first; printed:
every pair, both medians, the median of the paired ratios and the overhead against the target.

    .venv/bin/python benchmarks/bench_startup.py [RUNS] [--top N] [--only validate|plain]
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
#: the most an installed aicr-pytest may add to a plain pytest run that does not use it
PLAIN_TARGET = 0.05
ONE_TEST = "def test_one():\n    assert 1 + 1 == 2\n"


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


def timed(cmd: list[str], cwd: str, key: str | None = None) -> float:
    """Wall seconds of one run; its CPU seconds (user + system) go to :data:`CPU`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    CPU.setdefault(key or (cmd[-1] if cmd[1] == "-c" else "validate"), []).append(cpu)
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


def plain_cmds(python: str, project: Path) -> tuple[list[str], list[str]]:
    """A one-test project under plain pytest: with aicr-pytest's plugins, and with both disabled."""
    run = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project)]
    return run, [*run, "-p", "no:aicr", "-p", "no:aicr_testkit"]


def bench_plain(runs: int) -> float:
    """Median paired ratio (with / without aicr-pytest) of a one-test project's whole pytest run."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_one.py").write_text(ONE_TEST)
        on, off = plain_cmds(sys.executable, project)
        timed(on, tmp, "plain")  # warm the page cache and the bytecode
        timed(off, tmp, "plain")
        with_aicr: list[float] = []
        without: list[float] = []
        for i in range(runs):
            first, second = (on, off) if i % 2 == 0 else (off, on)
            a, b = timed(first, tmp, "plain"), timed(second, tmp, "plain")
            t_on, t_off = (a, b) if first is on else (b, a)
            with_aicr.append(t_on)
            without.append(t_off)
            print(
                f"pair {i + 1}: with aicr-pytest {t_on:.3f} s   -p no:aicr -p no:aicr_testkit {t_off:.3f} s"
            )
    ratio = statistics.median(on_s / off_s for on_s, off_s in zip(with_aicr, without, strict=True))
    print(f"median with aicr-pytest: {statistics.median(with_aicr):.3f} s")
    print(f"median with -p no:aicr -p no:aicr_testkit: {statistics.median(without):.3f} s")
    verdict = "within" if ratio - 1 <= PLAIN_TARGET else "OVER"
    overhead = f"{(ratio - 1) * 100:+.1f} %"
    print(f"median paired ratio: {ratio:.3f} ({overhead}; {verdict} the {PLAIN_TARGET:.0%} target)")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=9)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--as-is", action="store_true", help="do not byte-compile the product first")
    parser.add_argument("--only", choices=("validate", "plain"), help="run one of the two benchmarks")
    args = parser.parse_args()
    if not args.as_is:
        for tree in (REPO / "aicr_pytest", REPO / "checks"):
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(tree)], check=True, stdout=subprocess.DEVNULL
            )
    print(f"bytecode: {'as the checkout has it' if args.as_is else 'compiled first, as pip install does'}")
    if args.only != "validate":
        print("plain pytest, one-test project, no --recipe:")
        bench_plain(args.runs)
    if args.only == "plain":
        return 0
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
