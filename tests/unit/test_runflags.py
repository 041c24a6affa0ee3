"""The `aicr validate` drop-in flags' domain functions: skip-check, require-gpu, version skew, phase keys,
coherence, --timeout, --config, report destinations, pull secrets, AICR readiness texts, logging."""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path

import pytest

from aicr_pytest.core import aicrconfig, coherence, constraints, logsetup, runflags, writable
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.recipe import parse_recipe
from aicr_pytest.core.settings import parse_timeout
from aicr_pytest.core.snapshot import parse_snapshot
from aicr_pytest.kube.run import add_image_pull_secrets
from aicr_pytest.plugin import options


def test_skip_check_rejects_unknown_names_and_an_emptied_phase_and_warns_on_inert_ones() -> None:
    declared = {"deployment": ["operator-health", "expected-resources"]}
    phases = ["deployment", "conformance", "performance"]
    with pytest.raises(UsageError, match='skipChecks entry "bogus" matches no validator'):
        runflags.preflight_skip_checks(["bogus"], declared, phases)
    with pytest.raises(UsageError, match="removes every declared check from phase deployment"):
        runflags.preflight_skip_checks(["operator-health", "expected-resources"], declared, phases)
    assert runflags.preflight_skip_checks(["operator-health"], declared, phases) == []
    assert runflags.preflight_skip_checks(["dra-support"], declared, phases) == [
        runflags.MSG_SKIP_INERT.format(name="dra-support")
    ]


def _snapshot(types: str) -> object:
    return parse_snapshot({"kind": "Snapshot", "measurements": json.loads(types)}, "s")


def test_require_gpu_fails_a_snapshot_without_a_gpu_measurement() -> None:
    no_gpu = _snapshot('[{"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1"}}]}]')
    gpu = _snapshot('[{"type": "GPU", "subtypes": [{"subtype": "smi", "data": {"count": 8}}]}]')
    result = runflags.require_gpu_result(no_gpu)  # type: ignore[arg-type]
    assert result is not None and not result.passed and result.error == runflags.MSG_NO_GPU
    assert runflags.require_gpu_result(gpu) is None  # type: ignore[arg-type]
    assert runflags.require_gpu_result(None) is not None


def test_version_skew_compares_aicr_release_versions_only() -> None:
    assert runflags.version_skew_warning("0.1.0", "v0.11.1", "v0.12.0") == runflags.MSG_VERSION_SKEW.format(
        binary="0.1.0", recipe="v0.11.1", snapshot="v0.12.0"
    )
    assert runflags.version_skew_warning("0.1.0", "v0.11.1", "v0.11.1") is None
    assert runflags.version_skew_warning("0.1.0", "dev", "v0.12.0") is None
    assert runflags.version_skew_warning("0.1.0", "v1.0.0-next", "") is None
    # aicr-pytest's own versions (no "v") are not AICR's numbering: never compared
    assert runflags.version_skew_warning("0.1.0", "0.1.0", "v0.12.0") is None
    assert runflags.version_skew_warning("", "", "") is None


def test_unknown_validation_phase_key_is_named_with_the_valid_ones() -> None:
    err = runflags.unknown_phase_keys_error({"deployment": {}, "performace": {}}, "r.yaml")
    assert err is not None and str(err) == runflags.MSG_UNKNOWN_PHASE_KEY.format(
        source="r.yaml", key="performace"
    )
    assert runflags.unknown_phase_keys_error({"readiness": {}, "conformance": {}}, "r.yaml") is None


def test_coherence_backfills_the_registry_type_and_sorts_every_problem() -> None:
    recipe, _ = parse_recipe(
        {
            "componentRefs": [
                {"name": "zz", "type": "Jsonnet"},
                {"name": "gpu-operator"},  # registry: Helm; no source, chart or manifests
                {"name": "off", "type": "Jsonnet", "overrides": {"enabled": False}},
            ]
        },
        "r",
    )
    entries = {"gpu-operator": {"name": "gpu-operator", "helm": {}}}
    with pytest.raises(UsageError) as exc:
        coherence.check_coherence([(r, r.enabled) for r in recipe.component_refs], entries.get)
    assert str(exc.value) == (
        'recipe has incoherent component ref(s): Helm component "gpu-operator" has no deployable primary '
        '(no source, chart or manifestFiles); component "zz" has unsupported type "Jsonnet"; expected "Helm" '
        'or "Kustomize"'
    )
    assert coherence.registry_type({"kustomize": {"defaultSource": "git"}}) == "Kustomize"


@pytest.mark.parametrize("text", ["5x", "5", "0", "-1m", "", "1.5.m"])
def test_timeout_must_be_a_positive_go_duration(text: str) -> None:
    with pytest.raises(UsageError, match="for flag --timeout"):
        parse_timeout(text)


def test_timeout_parses_go_durations() -> None:
    assert parse_timeout("5m") == 300.0
    assert parse_timeout("1h30m") == 5400.0


def test_config_values_convert_to_command_line_forms(tmp_path: Path) -> None:
    cfg = tmp_path / "aicr.yaml"
    cfg.write_text(
        "kind: AICRConfig\nspec:\n  validate:\n    agent:\n      namespace: team-a\n"
        "      nodeSelector: {pool: gpu}\n"
        "      tolerations: [{key: k, value: v, effect: NoSchedule}, {operator: Exists}]\n"
        "    execution: {timeout: 10m, skipChecks: [dra-support]}\n"
    )
    got = aicrconfig.load_validate_config(str(cfg))
    assert got == {
        "agent.namespace": "team-a",
        "agent.nodeSelector": ["pool=gpu"],
        "agent.tolerations": ["k=v:NoSchedule", "*"],
        "execution.timeout": "10m",
        "execution.skipChecks": ["dra-support"],
    }


def test_precedence_is_flag_then_env_then_config_then_default() -> None:
    opt = options.by_name()["namespace"]
    config = {"agent.namespace": "from-config"}
    assert options.resolve(opt, "flag", {"AICR_NAMESPACE": "env"}, config) == "flag"
    assert options.resolve(opt, None, {"AICR_NAMESPACE": "env"}, config) == "env"
    assert options.resolve(opt, None, {}, config) == "from-config"
    assert options.resolve(opt, None, {}, {}) == "aicr-validation"
    gpu = options.by_name()["require_gpu"]
    assert options.resolve(gpu, False, {}, {"agent.requireGpu": True}) is True


def test_namespace_short_flag_is_validate_only() -> None:
    opt = options.by_name()["namespace"]
    assert opt.flags_for(options.VALIDATE) == ("-n", "--namespace")
    assert opt.flags_for(options.PYTEST) == ("--aicr-namespace",)
    assert options.by_name()["debug"].flags_for(options.PYTEST) == ("--aicr-debug",)


def test_report_destinations_are_probed_and_a_late_failure_has_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="it is a directory"):
        writable.check_writable(str(tmp_path), "-o")
    with pytest.raises(UsageError, match="cannot write the report there"):
        writable.check_writable("/proc/ctrf.json", "-o")
    writable.check_writable(str(tmp_path / "new" / "ctrf.json"), "-o")
    assert not (tmp_path / "new").exists()  # probing creates nothing at the destination
    fallback = writable.fallback_path("/proc/ctrf.json", str(tmp_path))
    assert fallback.parent == tmp_path and fallback.name.startswith("ctrf-") and fallback.suffix == ".json"


def test_late_report_write_failure_goes_to_the_named_fallback(tmp_path: Path) -> None:
    from aicr_pytest.report import ctrf

    with pytest.raises(writable.OutputError) as err:
        ctrf.write({"results": {"tests": []}}, "/proc/ctrf.json", io.StringIO())
    line = str(err.value)
    assert line.startswith(
        "CTRF report /proc/ctrf.json: the output could not be written: ENOENT (No such file or directory); "
        "it was written to "
    )
    written = Path(line.rsplit(" instead", 1)[0].rsplit("written to ", 1)[1])
    assert json.loads(written.read_text()) == {"results": {"tests": []}}
    written.unlink()


def test_image_pull_secrets_reach_every_pod_spec() -> None:
    job = {"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    crd = {"kind": "TrainingRuntime", "spec": {"a": [{"template": {"spec": {"containers": []}}}]}}
    pod = {"kind": "Pod", "spec": {"containers": [], "imagePullSecrets": [{"name": "regcred"}]}}
    assert add_image_pull_secrets(job, ["regcred"]) == 1
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert add_image_pull_secrets(crd, ["a", "b"]) == 1
    assert add_image_pull_secrets(pod, ["regcred", "other"]) == 1
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}, {"name": "other"}]
    assert add_image_pull_secrets({"kind": "ConfigMap", "data": {}}, ["x"]) == 0
    dgd = {"spec": {"services": {"Frontend": {"extraPodSpec": {"mainContainer": {"image": "i"}}}}}}
    assert add_image_pull_secrets(dgd, ["regcred"]) == 1
    assert dgd["spec"]["services"]["Frontend"]["extraPodSpec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_readiness_texts_are_aicrs_for_missing_and_unparsable_values() -> None:
    snap = parse_snapshot(
        {"measurements": [{"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "unknown"}}]}]},
        "s",
    )
    missing = constraints.evaluate_constraint("OS.release.VERSION", ">= 22.04", snap)
    assert (
        constraints.aicr_cause(missing)
        == "[NOT_FOUND] value not found in snapshot: [NOT_FOUND] key not found in subtype"
    )
    bad = constraints.evaluate_constraint("OS.release.ID", ">= 22.04", snap)
    assert constraints.format_readiness_failure(bad) == (
        "readiness check could not evaluate: OS.release.ID: [INVALID_REQUEST] cannot parse actual version: "
        '[INVALID_REQUEST] non-numeric component: "unknown": version component is not numeric'
    )
    assert constraints.go_version_error("1.2.3.4") == (
        "[INVALID_REQUEST] too many version components: version has more than 3 components"
    )
    assert constraints.go_version_error("v1.33.0-eks-1") is None


def test_log_json_writes_one_json_object_per_line_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    logger = logsetup.configure_logging(debug=True, log_json=True)
    try:
        logger.debug("hello %s", "world")
    finally:
        logsetup.configure_logging()
        logger.setLevel(logging.NOTSET)
    record = json.loads(err.getvalue().strip().splitlines()[-1])
    assert record["level"] == "DEBUG" and record["msg"] == "hello world" and record["logger"] == "aicr_pytest"
    assert logsetup.traceback_style(True) == "long" and logsetup.traceback_style(False) is None


def test_run_scope_stamps_pull_secrets_and_uses_its_namespace() -> None:
    from aicr_pytest.kube.run import RunScope

    def no_cluster() -> object:
        raise AssertionError("stamping never connects")

    scope = RunScope(no_cluster, "abcd1234", namespace="team-ns", image_pull_secrets=("regcred",))  # type: ignore[arg-type]
    job = scope.stamp(
        {"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": []}}}}
    )
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert scope.namespace == "team-ns"
    plain = RunScope(no_cluster, "abcd1234")  # type: ignore[arg-type]
    assert (
        "imagePullSecrets"
        not in plain.stamp({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}})["spec"]
    )


def test_directory_destinations_are_probed_without_leaving_anything(tmp_path: Path) -> None:
    writable.check_writable_dir(str(tmp_path / "a" / "b"), "--emit-attestation")
    assert not (tmp_path / "a").exists()
    writable.check_writable_dir(str(tmp_path), "--evidence-dir")
    assert list(tmp_path.iterdir()) == []
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError) as err:
        writable.check_writable_dir(str(afile), "--evidence-dir")
    assert str(err.value) == f"--evidence-dir {afile}: cannot write there: it is not a directory"
    with pytest.raises(UsageError) as err:
        writable.check_writable_dir(str(afile / "sub"), "--emit-attestation")
    why = f"{afile} is not a directory"
    assert str(err.value) == f"--emit-attestation {afile / 'sub'}: cannot write there: {why}"
    with pytest.raises(UsageError, match=r"^--emit-attestation /proc/aicr: cannot write there: "):
        writable.check_writable_dir("/proc/aicr", "--emit-attestation")
