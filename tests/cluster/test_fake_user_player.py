"""A user's own check, played on the fake cluster by a player the user registers (end to end).

The throw-away project below is what a user writes: a check (``@pytest.mark.check``, the ``check``
and ``run`` fixtures, the cluster facade) that starts a probe pod and judges its log, and a conftest
whose fixture registers a player for that probe (``using_player``) and starts a fake cluster with
the plugin's ``fake_cluster_factory`` where ``--kubeconfig`` points. The probe's log exists only
because the player scripts it: a registry that ignored the user's player leaves the pod's log empty
and the check fails.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.testing import player_names
from tests.plugin.helpers import SNAPSHOT, make_recipe

# A conformance check the catalog declares; the project runs without the bundled checks, so its own
# test is the only implementation collected.
CHECK = "slinky-slurm-health"

CONFTEST = '''
import pytest

from aicr_pytest.testing import ClusterProfile, RealClock, SimulatedCluster, using_player

PROBE_LOG = "widget-probe: 4 widgets answered, all ok\\n"


def play_widget_probe(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """The probe pods the check creates print what a healthy widget service answers."""
    fc.sim.script(name_prefix="widget-probe-", logs={"probe": PROBE_LOG}, start_after=0.2, run_for=0.3)


@pytest.fixture(autouse=True)
def widget_cluster(request, aicr_fake_cluster_factory):
    kubeconfig = request.config.getoption("aicr_kubeconfig")
    with using_player("widget-probe", play_widget_probe):
        yield aicr_fake_cluster_factory("h100-eks-training", clock=RealClock(), kubeconfig_path=kubeconfig)
'''

CHECK_MODULE = f'''
import pytest

from aicr_pytest.kube.logs import read_log
from aicr_pytest.kube.wait import wait_for_pod_phase


@pytest.mark.check("{CHECK}")
def test_widget_probe(aicr_check, aicr_run, aicr_clock):
    namespace = aicr_run.ensure_namespace()
    pod = aicr_run.create(
        {{
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {{"name": "widget-probe"}},
            "spec": {{
                "restartPolicy": "Never",
                "containers": [{{"name": "probe", "image": "registry.example/widget-probe:1"}}],
            }},
        }}
    )
    name = pod["metadata"]["name"]
    wait_for_pod_phase(aicr_run.cluster, namespace, name, "Succeeded", timeout=60, clock=aicr_clock)
    log = read_log(aicr_run.cluster, namespace, name, "probe")
    aicr_check.emit("RESULT: " + log.strip())
    assert "all ok" in log, f"widget probe {{name}} said {{log!r}}"
'''


def run_project(pytester: pytest.Pytester, conftest: str) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    """Write the project, run its conformance phase in-process; the result and the CTRF tests."""
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_widget_probe=CHECK_MODULE)
    recipe = pytester.path / "recipe.yaml"
    recipe.write_text(yamlio.dump(make_recipe(conformance=[CHECK])))
    snapshot = pytester.path / "snapshot.yaml"
    snapshot.write_text(yamlio.dump(SNAPSHOT))
    ctrf = pytester.path / "ctrf.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--recipe",
        str(recipe),
        "--snapshot",
        str(snapshot),
        "--aicr-kubeconfig",
        str(pytester.path / "kubeconfig"),
        "--aicr-phase",
        "conformance",
        "--aicr-no-bundled-checks",
        "--aicr-ctrf-report",
        str(ctrf),
    )
    assert ctrf.exists(), result.stdout.str()[-3000:]
    return result, list(json.loads(ctrf.read_text())["results"]["tests"])


def test_a_user_check_gets_its_user_registered_player_on_the_fake_cluster(pytester: pytest.Pytester) -> None:
    result, tests = run_project(pytester, CONFTEST)
    output = result.stdout.str()
    assert result.ret == 0, output[-3000:]
    assert [(t["name"], t["status"]) for t in tests] == [(CHECK, "passed")], output[-3000:]
    assert tests[0]["stdout"] == ["RESULT: widget-probe: 4 widgets answered, all ok"]
    result.stdout.fnmatch_lines(["*- aicr results -*", "widget-probe: 4 widgets answered, all ok"])
    # the fixture's registration was scoped to the test that used it
    assert "widget-probe" not in player_names()


def test_the_same_check_fails_without_its_player(pytester: pytest.Pytester) -> None:
    """The project with the registration taken out: the probe's log is empty and the check fails."""
    unregistered = CONFTEST.replace('with using_player("widget-probe", play_widget_probe):', "if True:")
    assert unregistered != CONFTEST
    result, tests = run_project(pytester, unregistered)
    assert [(t["name"], t["status"]) for t in tests] == [(CHECK, "failed")], result.stdout.str()[-3000:]
    assert re.fullmatch(r"widget probe widget-probe-\S+ said ''", tests[0]["message"]), tests[0]["message"]
