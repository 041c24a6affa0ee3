"""The plugin and CLI must not load the kubernetes client until a check needs the cluster:
``--no-cluster`` and ``--help`` stay fast and never build a client."""

from __future__ import annotations

import subprocess
import sys


def test_plugin_import_does_not_load_kubernetes() -> None:
    code = (
        "import sys, aicr_pytest.plugin, aicr_pytest.core.inputs, aicr_pytest.cli, "
        "aicr_pytest.plugin.testkit; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_cluster_run_does_not_load_kubernetes(tmp_path: object) -> None:
    code = """
import sys
from pathlib import Path
import pytest
repo = Path("recipes/examples")
ret = pytest.main(["-q", "-p", "no:cacheprovider", "--recipe", str(repo / "h100-eks-training.yaml"),
                   "--snapshot", str(repo / "h100-eks-training-snapshot.yaml"), "--no-cluster"])
print("RET", int(ret), "kubernetes" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "RET 0 False"
