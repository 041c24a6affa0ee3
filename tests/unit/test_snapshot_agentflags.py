"""The agent flags' parsing (:mod:`aicr_pytest.snapshot.agentflags`), the Job they shape, ``--template``."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.snapshot import agentflags
from aicr_pytest.snapshot.agent import agent_job, agent_resources
from aicr_pytest.snapshot.template import TemplateRenderError, load_template


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("500m", None),
        ("1Gi", None),
        ("1.5", None),
        (".5", None),
        ("+2", None),
        ("1e3", None),
        ("2E-3", None),
        ("10k", None),
        ("lots", agentflags.QTY_FORMAT),
        ("1Gb", agentflags.QTY_FORMAT),
        ("", agentflags.QTY_FORMAT),
        ("1.2.3", agentflags.QTY_NUMERIC),
        ("1K", agentflags.QTY_SUFFIX),
        ("1mi", agentflags.QTY_SUFFIX),
    ],
)
def test_quantity_grammar(text: str, why: str | None) -> None:
    assert agentflags.quantity_error(text) == why


def test_resource_lists() -> None:
    assert agentflags.parse_resource_list("requests", None) is None
    assert agentflags.parse_resource_list("requests", " , ") is None
    assert agentflags.parse_resource_list("limits", " cpu = 2 ,, nvidia.com/gpu=1") == {
        "cpu": "2",
        "nvidia.com/gpu": "1",
    }
    with pytest.raises(UsageError, match=r'^invalid --limits: entry "=1" has empty name or quantity$'):
        agentflags.parse_resource_list("limits", "=1")


def test_names() -> None:
    assert agentflags.check_subdomain("service-account-name", " agent.sa ") == "agent.sa"
    assert agentflags.check_subdomain("service-account-name", "") is None
    with pytest.raises(
        UsageError, match=r'^invalid --service-account-name "-sa": must be a DNS-1123 subdomain$'
    ):
        agentflags.check_subdomain("service-account-name", "-sa")
    assert agentflags.check_job_prefix(None, "aicr-snapshot") == "aicr-snapshot"
    assert agentflags.check_job_prefix("audit-1", "aicr-snapshot") == "audit-1"
    with pytest.raises(UsageError, match=r'^invalid --job-name "a.b": must be a DNS-1123 label$'):
        agentflags.check_job_prefix("a.b", "aicr-snapshot")
    assert agentflags.check_runtime_class("nvidia", require_gpu=False) == "nvidia"
    assert agentflags.check_runtime_class(None, require_gpu=True) is None
    with pytest.raises(UsageError) as err:
        agentflags.check_runtime_class("nvidia", require_gpu=True)
    assert str(err.value) == agentflags.MSG_GPU_AND_RUNTIME_CLASS


def test_resources_replace_defaults_per_key() -> None:
    assert agent_resources(require_gpu=False) == {
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "1", "memory": "256Mi"},
    }
    assert agent_resources(require_gpu=True, requests={"memory": "1Gi"}, limits={"nvidia.com/gpu": "0"}) == {
        "requests": {"cpu": "100m", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "256Mi", "nvidia.com/gpu": "0"},  # an explicit key wins
    }


def test_the_job_without_the_new_flags_is_unchanged() -> None:
    kw = dict(
        configmap="cm",
        image="img",
        privileged=True,
        node_selector=None,
        tolerations=None,
        require_gpu=False,
        active_deadline_seconds=300,
    )
    plain = agent_job("aicr-snapshot", **kw)  # type: ignore[arg-type]
    pod = plain["spec"]["template"]["spec"]
    assert "runtimeClassName" not in pod and "serviceAccountName" not in pod
    shaped = agent_job("aicr-snapshot", runtime_class="nvidia", service_account="sa", **kw)  # type: ignore[arg-type]
    spod = shaped["spec"]["template"]["spec"]
    assert (spod.pop("runtimeClassName"), spod.pop("serviceAccountName")) == ("nvidia", "sa")
    assert spod == pod


def test_a_template_renders_the_document(tmp_path: Path) -> None:
    path = tmp_path / "t.j2"
    path.write_text("{{ kind }} {{ snapshot.metadata['source-node'] }} {{ measurements | length }}\n")
    template = load_template(str(path), fmt="yaml")
    doc = {"kind": "Snapshot", "metadata": {"source-node": "n1"}, "measurements": [{"type": "K8s"}]}
    assert template.render(doc) == "Snapshot n1 1\n"


def test_a_template_cannot_reach_outside_the_sandbox(tmp_path: Path) -> None:
    path = tmp_path / "t.j2"
    path.write_text("{{ kind.__class__.__mro__[1].__subclasses__() }}\n")
    template = load_template(str(path), fmt="yaml")
    with pytest.raises(
        TemplateRenderError, match=r"^\[INTERNAL\] failed to execute template .*t\.j2: access to attribute"
    ):
        template.render({"kind": "Snapshot"})
