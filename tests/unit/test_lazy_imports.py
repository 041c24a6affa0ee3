"""``--no-cluster`` and ``--help`` import neither the kubernetes client nor the simulator.

Both entry points, in a fresh interpreter each: the plugin connects lazily (a check that needs the
cluster builds the client), and :mod:`aicr_pytest.testing` is imported only when a user asks for a
simulated cluster (``--simulate``, the ``aicr_fake_cluster`` fixtures).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"

#: prints the heavy modules the code before it loaded, as the last line
_REPORT = (
    "\nimport sys\n"
    "heavy = sorted({m.split('.')[0] if m.split('.')[0] in ('kubernetes', 'urllib3') else m"
    " for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3')"
    " or m == 'aicr_pytest.testing' or m.startswith('aicr_pytest.testing.')})\n"
    "print('HEAVY', heavy)\n"
)


def _report_line(code: str, report: str, tag: str, cwd: Path) -> str:
    """Run ``code`` then ``report`` in a fresh interpreter; the last stdout line starting with ``tag``."""
    proc = subprocess.run(
        [sys.executable, "-c", code + report], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{tag} ")]
    assert lines, proc.stdout + proc.stderr
    return lines[-1]


def _heavy_modules(code: str, cwd: Path) -> str:
    return _report_line(code, _REPORT, "HEAVY", cwd)


def test_importing_the_plugin_and_cli_loads_neither() -> None:
    code = "import aicr_pytest.plugin, aicr_pytest.core.inputs, aicr_pytest.cli, aicr_pytest.plugin.testkit"
    assert _heavy_modules(code, REPO) == "HEAVY []"


@pytest.mark.parametrize(
    "argv",
    [
        ["--aicr-no-cluster"],
        ["--aicr-no-cluster", "-n", "2"],
    ],
    ids=["pytest-no-cluster", "pytest-no-cluster-xdist"],
)
def test_pytest_no_cluster_loads_neither(tmp_path: Path, argv: list[str]) -> None:
    code = (
        "import pytest\n"
        f"ret = pytest.main(['-q', '-p', 'no:cacheprovider', '--recipe', {str(EXAMPLE)!r}, "
        f"'--snapshot', {str(SNAPSHOT)!r}, *{argv!r}])\n"
        "assert int(ret) == 0, int(ret)\n"
    )
    assert _heavy_modules(code, tmp_path) == "HEAVY []"


def test_validate_no_cluster_loads_neither(tmp_path: Path) -> None:
    code = (
        "from aicr_pytest import cli\n"
        f"ret = cli.main(['validate', '-r', {str(EXAMPLE)!r}, '-s', {str(SNAPSHOT)!r}, '--no-cluster', "
        f"'-o', {str(tmp_path / 'ctrf.json')!r}])\n"
        "assert ret == 0, ret\n"
    )
    assert _heavy_modules(code, tmp_path) == "HEAVY []"


@pytest.mark.parametrize(
    "code",
    [
        "import pytest\npytest.main(['--help'])\n",
        "import contextlib\nfrom aicr_pytest import cli\n"
        "with contextlib.suppress(SystemExit):\n    cli.main(['validate', '--help'])\n",
        "import contextlib\nfrom aicr_pytest import cli\n"
        "with contextlib.suppress(SystemExit):\n    cli.main(['--help'])\n",
    ],
    ids=["pytest-help", "validate-help", "cli-help"],
)
def test_help_loads_neither(tmp_path: Path, code: str) -> None:
    assert _heavy_modules(code, tmp_path) == "HEAVY []"


def test_the_probe_sees_the_simulator_when_it_is_used(tmp_path: Path) -> None:
    """The probe itself can fail: a simulated run does import the simulator (and the client)."""
    code = (
        "from aicr_pytest import cli\n"
        f"cli.main(['validate', '-r', {str(EXAMPLE)!r}, '-s', {str(SNAPSHOT)!r}, '--simulate', "
        "'h100-eks-training', '--phase', 'performance', "
        f"'-o', {str(tmp_path / 'ctrf.json')!r}])\n"
    )
    heavy = _heavy_modules(code, tmp_path)
    assert "aicr_pytest.testing" in heavy and "kubernetes" in heavy


# --- start-up: what a --no-cluster run of the example leaves unimported ------------

#: prints which of the start-up-relevant modules the code before it loaded
_STARTUP_REPORT = (
    "\nimport sys\n"
    "watched = ('jinja2', 'xdist', 'platformdirs', 'aicr_pytest.inference.aiperf',"
    " 'aicr_pytest.inference.knobs', 'aicr_pytest.nccl.render', 'aicr_pytest.kube.client',"
    " 'aicr_pytest.nccl.cluster', 'aicr_pytest.inference.cluster', 'aicr_pytest.conformance.common',"
    " 'aicr_pytest.conformance.accelerator_metrics', 'aicr_pytest.deployment.expected_resources',"
    " 'aicr_pytest.deployment.nvidia_smi')\n"
    "print('LOADED', sorted(m for m in watched if m in sys.modules))\n"
)


def _loaded(code: str, cwd: Path) -> str:
    return _report_line(code, _STARTUP_REPORT, "LOADED", cwd)


def test_family_hooks_do_not_import_the_family(tmp_path: Path) -> None:
    assert _loaded("import aicr_pytest.nccl.hooks, aicr_pytest.inference.hooks", tmp_path) == "LOADED []"


def test_lazy_re_exports_still_resolve(tmp_path: Path) -> None:
    code = "from aicr_pytest import nccl, inference as inf\nassert callable(inf.resolve_knobs)\n"
    assert _loaded(code, tmp_path) == "LOADED ['aicr_pytest.inference.knobs']"


@pytest.mark.parametrize(
    ("code", "loaded"),
    [
        (
            "from aicr_pytest import conformance as c\nc.check_function('accelerator-metrics')",
            "accelerator_metrics",
        ),
        ("from aicr_pytest import deployment as d\nassert callable(d.check_nvidia_smi)", "nvidia_smi"),
        ("from aicr_pytest import nccl\nassert nccl.NcclBenchmark", "cluster"),
    ],
    ids=["conformance", "deployment", "nccl"],
)
def test_a_family_loads_its_check_code_on_first_use(tmp_path: Path, code: str, loaded: str) -> None:
    out = _loaded(code, tmp_path)
    assert loaded in out and "aicr_pytest.kube.client" in out, out


def test_validate_no_cluster_skips_unneeded_imports(tmp_path: Path) -> None:
    """The example selects nccl-all-reduce-bw (its check module is collected), not inference-perf;
    no template is rendered; no plugin that only -n needs is loaded; the check modules are collected
    without the cluster client or the families' check code (imported when a check runs).
    pytest-rerunfailures (dev extra) imports xdist's hooks itself: it is turned off here."""
    code = (
        "from aicr_pytest import cli\n"
        f"ret = cli.main(['validate', '-r', {str(EXAMPLE)!r}, '-s', {str(SNAPSHOT)!r}, '--no-cluster', "
        f"'-o', {str(tmp_path / 'ctrf.json')!r}, '--', '-p', 'no:rerunfailures'])\n"
        "assert ret == 0, ret\n"
    )
    assert _loaded(code, tmp_path) == "LOADED []"


#: what a pytest run that does not use aicr-pytest must not pay for (models, YAML, templates, the
#: cluster client, signing) and the run's own hooks
_START_UP = (
    "\nimport sys\n"
    "roots = ('pydantic', 'kubernetes', 'jinja2', 'sigstore', 'yaml', 'ruamel', 'urllib3')\n"
    "found = sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in roots}"
    " | {m for m in sys.modules if m == 'aicr_pytest.plugin.hooks'})\n"
    "print('STARTUP', found)\n"
)


def test_the_pytest11_modules_import_nothing_heavy() -> None:
    code = "import pytest, aicr_pytest.plugin, aicr_pytest.plugin.testkit, aicr_pytest.plugin.fixtures"
    assert _report_line(code, _START_UP, "STARTUP", REPO) == "STARTUP []"


def test_a_pytest_run_without_a_recipe_imports_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    code = (
        "import pytest\n"
        f"ret = pytest.main(['-q', '-p', 'no:cacheprovider', {str(tmp_path)!r}])\n"
        "assert int(ret) == 0, int(ret)\n"
    )
    assert _report_line(code, _START_UP, "STARTUP", tmp_path) == "STARTUP []"


def test_a_run_asked_for_registers_the_run_hooks(tmp_path: Path) -> None:
    """The control: the same check sees the heavy modules once ``--recipe`` asks for a run."""
    code = (
        "import pytest\n"
        f"ret = pytest.main(['-q', '-p', 'no:cacheprovider', '--recipe', {str(EXAMPLE)!r}, "
        f"'--snapshot', {str(SNAPSHOT)!r}, '--aicr-no-cluster'])\n"
        "assert int(ret) == 0, int(ret)\n"
    )
    line = _report_line(code, _START_UP, "STARTUP", tmp_path)
    assert "'aicr_pytest.plugin.hooks'" in line and "'pydantic'" in line
