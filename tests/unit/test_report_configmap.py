"""``validate -o cm://namespace/name``: the URI check before any work, the ConfigMap's shape, and the
1 MiB limit (a clear refusal, never a truncated report).  The write against a cluster is in
tests/plugin/test_provider_data.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aicr_pytest import cli
from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin import validate_outputs
from aicr_pytest.report import configmap as cm


def test_good_uris_split_into_namespace_and_name() -> None:
    assert cm.parse_output_uri("cm://aicr-validation/report") == ("aicr-validation", "report")
    assert cm.parse_output_uri("cm://ns/run.2026-12-01") == ("ns", "run.2026-12-01")
    assert cm.is_configmap_uri(" cm://ns/x") and not cm.is_configmap_uri("report.json")
    assert not cm.is_configmap_uri(None)


@pytest.mark.parametrize(
    ("uri", "line"),
    [
        ("cm://", 'invalid --output "cm://": expected cm://namespace/name'),
        ("cm://ns", 'invalid --output "cm://ns": expected cm://namespace/name'),
        ("cm:///name", 'invalid --output "cm:///name": expected cm://namespace/name'),
        (
            "cm://ns/Bad_Name",
            'invalid --output "cm://ns/Bad_Name": ConfigMap name "Bad_Name" must be a DNS-1123 subdomain',
        ),
        ("cm://ns/a/b", 'invalid --output "cm://ns/a/b": ConfigMap name "a/b" must be a DNS-1123 subdomain'),
        ("cm://my.ns/x", 'invalid --output "cm://my.ns/x": namespace "my.ns" must be a DNS-1123 label'),
        (
            "cm://" + "n" * 64 + "/x",
            f'invalid --output "cm://{"n" * 64}/x": namespace "{"n" * 64}" must be a DNS-1123 label',
        ),
    ],
)
def test_bad_uris_are_one_usage_line(uri: str, line: str) -> None:
    with pytest.raises(UsageError) as err:
        cm.parse_output_uri(uri)
    assert str(err.value) == line


def test_the_configmap_carries_the_report_under_aicrs_key() -> None:
    obj = cm.configmap_object("ns", "report", '{"a": 1}\n', "2026-12-01T00:00:00Z")
    assert obj["kind"] == "ConfigMap" and obj["metadata"]["namespace"] == "ns"
    assert obj["data"] == {
        "snapshot.json": '{"a": 1}\n',
        "format": "json",
        "timestamp": "2026-12-01T00:00:00Z",
    }
    labels = obj["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "aicr-pytest"
    assert labels["app.kubernetes.io/component"] == "ValidationReport"
    assert not any("run" in key for key in labels)  # a deliverable: no run id, so no cleanup finds it


def test_a_report_over_1_mib_is_refused_not_truncated() -> None:
    text = "x" * cm.MAX_CONFIGMAP_BYTES
    with pytest.raises(cm.ReportTooLarge) as err:
        cm.configmap_object("ns", "report", text, "2026-12-01T00:00:00Z")
    size = cm.MAX_CONFIGMAP_BYTES + len("snapshot.json") + len("format") + len("json") + len("timestamp") + 20
    assert str(err.value) == (
        f"cannot write the CTRF report to cm://ns/report: it is {size} bytes and a ConfigMap holds at most "
        "1048576 bytes; write it to a file with -o PATH instead"
    )


#: a validate request with no kubeconfig or context named
REQUEST = cli.ValidateRequest.of({"fail_on_error": True})


def test_validate_says_so_in_one_line_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    applied: list[Any] = []

    class Cluster:
        def apply(self, obj: Any) -> None:
            applied.append(obj)

    monkeypatch.setattr("aicr_pytest.kube.connect", lambda *a, **k: Cluster())
    big = {"timestamp": "t", "results": {"tests": [{"name": "x" * cm.MAX_CONFIGMAP_BYTES}]}}
    assert not validate_outputs.write_report_configmap(("ns", "r"), big, REQUEST)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "aicr-pytest: error: cannot write the CTRF report to cm://ns/r: it is "
    )
    assert applied == []
    small = {"timestamp": "t", "results": {}}
    assert validate_outputs.write_report_configmap(("ns", "r"), small, REQUEST)
    assert json.loads(applied[0]["data"]["snapshot.json"]) == small
    assert capsys.readouterr().err.strip() == "CTRF report written to cm://ns/r (key snapshot.json)"
