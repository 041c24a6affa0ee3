"""The option table is the one declaration of every option: both ``--help`` texts, both parsers,
the forwarded pytest arguments and the run's Settings follow it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import pydantic
import pytest

from aicr_pytest import cli
from aicr_pytest.core.check import CheckContext
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.settings import (
    DEFAULT_NVIDIA_SMI_IMAGE,
    DERIVED_FIELDS,
    PLACEMENT_PREFIX,
    Placement,
    Settings,
    Toleration,
)
from aicr_pytest.evidence.cncf.settings import METADATA_OPTIONS
from aicr_pytest.evidence.settings import EvidenceSettings
from aicr_pytest.plugin import options
from aicr_pytest.plugin.options import OPTIONS, PYTEST, VALIDATE, EntryPoint, Option

PYTEST_SECTION = options.PYTEST_GROUP[1] + ":"
#: the flags of a validation run (plain pytest and ``validate``; the other subcommands aside)
RUN_FLAGS = [opt for opt in OPTIONS if opt.run_option and not opt.positional]

#: what a new flag looks like to the table (not a real option): one entry, nothing else edited
EXTRA = Option(
    "namespace_for_test",
    ("--namespace-for-test",),
    "namespace for the objects a run creates",
    setting=None,
    default="aicr-validation",
    env="AICR_NAMESPACE_FOR_TEST",
    metavar="NS",
)


def squash(text: str) -> str:
    """Help text without whitespace: line wrapping (also at hyphens) cannot hide a match."""
    return re.sub(r"\s+", "", text)


class Entry:
    """One option as a help screen lists it: the flags with metavars, and the help text."""

    def __init__(self, head: str, body: str) -> None:
        self.head = head
        self.body = body


def option_blocks(help_text: str, section: str | None = None) -> dict[tuple[str, ...], Entry]:
    """``{(flag, ...): its entry}`` from an argparse-style help screen.

    ``section``: only the entries under that heading (pytest's ``--help`` has many groups).
    """
    lines = help_text.splitlines()
    if section is not None:
        start = next(i for i, line in enumerate(lines) if line.strip() == section)
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines)
        )
        lines = lines[start + 1 : end]
    blocks: dict[tuple[str, ...], Entry] = {}
    current: Entry | None = None
    for line in lines:
        if re.match(r"^  -", line):
            head, *body = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            flags = tuple(part.split(" ")[0].split("=")[0] for part in head.split(", "))
            assert flags not in blocks, f"{flags} listed twice"
            current = blocks[flags] = Entry(head, body[0] if body else "")
        elif current is not None and line.startswith("    "):
            current.body += " " + line.strip()
        else:
            current = None
    return blocks


def validate_help(capsys: pytest.CaptureFixture[str], table: Sequence[Option] | None = None) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser(table).parse_args(["validate", "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def pytest_help(pytester: pytest.Pytester) -> str:
    result = pytester.runpytest("-p", "no:cacheprovider", "--help")
    assert result.ret == 0
    return str(result.stdout.str())


def assert_listed(opt: Option, entry_point: EntryPoint, blocks: dict[tuple[str, ...], Entry]) -> str:
    """Assert the entry shows the option's help, default, env var and metavar; its squashed help."""
    flags = opt.flags_for(entry_point)
    assert flags in blocks, f"{opt.name}: {flags} not in {entry_point} --help"
    block = squash(blocks[flags].body)
    assert squash(opt.help) in block
    default = opt.shown_default()
    if default is not None:
        assert squash(f"default: {default}") in block, f"{opt.name}: default not shown on {entry_point}"
    else:
        assert "default:" not in block
    if opt.env is not None:
        assert squash(f"env {opt.env}") in block, f"{opt.name}: env var not shown on {entry_point}"
    if opt.metavar is not None:
        assert opt.metavar in blocks[flags].head
    return block


def test_every_entry_is_in_both_help_texts_with_the_same_default_and_env(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    on_validate = option_blocks(validate_help(capsys))
    on_pytest = option_blocks(pytest_help(pytester), PYTEST_SECTION)
    shown: dict[EntryPoint, set[tuple[str, ...]]] = {PYTEST: set(), VALIDATE: set()}
    for opt in RUN_FLAGS:
        texts = {}
        for entry_point, blocks in ((VALIDATE, on_validate), (PYTEST, on_pytest)):
            if opt.hidden or not opt.takes(entry_point):
                assert opt.flags_for(entry_point) not in blocks, f"{opt.name} must not be on {entry_point}"
                continue
            texts[entry_point] = assert_listed(opt, entry_point, blocks)
            shown[entry_point].add(opt.flags_for(entry_point))
        if len(texts) == 2:  # the same words, default and env var on both
            assert texts[PYTEST] == texts[VALIDATE], opt.name
    # nothing on either screen that the table does not declare
    assert set(on_pytest) == shown[PYTEST]
    assert set(on_validate) - {("-h", "--help")} == shown[VALIDATE]
    # spot checks of the uniform wording
    assert on_validate[("--fail-on-error",)].body.endswith("(default: true)")
    assert squash(on_pytest[("--aicr-nvidia-smi-image",)].body).endswith(
        squash(f"(default: {DEFAULT_NVIDIA_SMI_IMAGE}; env AICR_NVIDIA_SMI_IMAGE)")
    )


def test_a_new_entry_appears_on_both_without_any_other_edit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(options, "OPTIONS", (*OPTIONS, EXTRA))
    monkeypatch.setenv("COLUMNS", "100")
    for entry_point, blocks in (
        (VALIDATE, option_blocks(validate_help(capsys))),
        (PYTEST, option_blocks(pytest_help(pytester), PYTEST_SECTION)),
    ):
        block = assert_listed(EXTRA, entry_point, blocks)
        assert squash("(default: aicr-validation; env AICR_NAMESPACE_FOR_TEST)") in block
    # parsed by validate, forwarded to pytest, parsed there into the same value
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml", "--namespace-for-test", "team-a"])
    args = options.resolve_validate(options.values_from(ns, VALIDATE))[1].pytest_args()
    assert "--aicr-namespace-for-test=team-a" in args
    config = pytester.parseconfig(*args)
    assert options.values_from(config.option, PYTEST)["namespace_for_test"] == "team-a"
    # resolution order: flag, then env var, then default
    assert options.resolve(EXTRA, "x", {"AICR_NAMESPACE_FOR_TEST": "y"}) == "x"
    assert options.resolve(EXTRA, None, {"AICR_NAMESPACE_FOR_TEST": "y"}) == "y"
    assert options.resolve(EXTRA, None, {}) == "aicr-validation"


def test_the_table_fills_exactly_the_settings_fields() -> None:
    fields = [opt.setting for opt in OPTIONS if opt.setting is not None and opt.model == "run"]
    assert len(fields) == len(set(fields)), "two options fill one Settings field"
    placed = {f.removeprefix(PLACEMENT_PREFIX) for f in fields if f.startswith(PLACEMENT_PREFIX)}
    assert placed == set(Placement.model_fields), "the placement flags fill the Placement"
    own = {f for f in fields if not f.startswith(PLACEMENT_PREFIX)}
    assert own | DERIVED_FIELDS | {"placement"} == set(Settings.model_fields)
    evidence = [opt.setting for opt in OPTIONS if opt.setting is not None and opt.model == "evidence"]
    assert len(evidence) == len(set(evidence)), "two options fill one EvidenceSettings field"
    assert set(evidence) == {f.name for f in dataclasses.fields(EvidenceSettings)}
    # Settings are built on the pytest side; an option that fills one must be a pytest option
    assert all(opt.takes(PYTEST) for opt in OPTIONS if opt.setting is not None)


def test_table_entries_are_well_formed() -> None:
    for entry_point in (*options.RUN, *options.COMMANDS):
        names = [opt.name for opt in OPTIONS if opt.takes(entry_point)]
        assert len(names) == len(set(names)), f"a name is declared twice on {entry_point}"
        flags = [f for opt in OPTIONS if opt.takes(entry_point) for f in opt.flags_for(entry_point)]
        assert len(flags) == len(set(flags)), f"a flag is declared twice on {entry_point}"
    # an option is a run option or a subcommand's, never both
    assert all(set(opt.entry_points) <= set(options.RUN) for opt in OPTIONS if opt.run_option)
    for opt in OPTIONS:
        assert opt.entry_points, opt.name
        # pytest reserves lowercase short options for itself (-k, -o, -p, -s, -r ...)
        assert all(f.startswith("--") for f in opt.flags_for(PYTEST)) or not opt.takes(PYTEST), opt.name
        assert set(opt.required_by) <= set(opt.entry_points), opt.name


def test_each_option_is_declared_once_and_shared_through_its_row() -> None:
    declared = [opt.name for opt in OPTIONS if not opt.derived]
    assert len(declared) == len(set(declared)), "an option is declared twice: reuse its row with .on()"
    assert {opt.name for opt in OPTIONS if opt.derived} <= set(declared)
    kubeconfig = [opt for opt in OPTIONS if opt.name == "kubeconfig"]
    assert [opt.entry_points for opt in kubeconfig] == [
        options.RUN,
        (options.SIMULATE,),
        (options.RECIPE,),
        (options.SNAPSHOT,),
        (options.HISTORY,),
        (options.SCHEDULE,),
    ]
    # a subcommand's use takes the row's name and flags, and nothing of the run's settings
    snapshot_use = kubeconfig[3]
    assert snapshot_use.derived and snapshot_use.setting is None and snapshot_use.metavar is None


def test_validate_forwards_every_shared_option_and_pytest_reads_it_back(pytester: pytest.Pytester) -> None:
    data = pytester.mkdir("data")
    argv = [
        "validate",
        "-r",
        "r.yaml",
        "--snapshot=-snapshot-starting-with-a-dash.yaml",
        "--phase",
        "conformance",
        "--phase",
        "deployment",
        "--no-cluster",
        "--fail-fast",
        "--data",
        str(data),
        "--node-selector",
        "a=b",
        "--node-selector",
        "c=d",
        "--toleration",
        "*",
        "-k",
        "/tmp/kc",
        "--kube-context",
        "ctx",
        "--no-cleanup",
        "--allow-fake-nodes",
        "--nvidia-smi-image",
        "img:1",
        "--evidence-dir",
        "ev",
        "--cncf-submission",
        "-f",
        "gang",
        "--feature",
        "hpa",
        "--cncf-checklist",
        "KubernetesAIConformance-1.36.yaml",
        "--cncf-should",
        *(arg for field, flag, _, _ in METADATA_OPTIONS for arg in (flag, f"value of {field}")),
        "--html",
        "report.html",
        "--emit-attestation",
        "out",
        "--full",
        "--bom",
        "bom.json",
        "--push",
        "registry.example/team/evidence",
        "--identity-token",
        "tok",
        "--oidc-device-flow",
        "--plain-http",
        "--insecure-tls",
        "--no-sign",
        "--yes",
        "--predicate-version",
        "3",
        "--allow-mutable-validator-tags",
        "--config",
        "aicr-config.yaml",
        "-n",
        "team-ns",
        "--image",
        "agent:1",
        "--image-pull-secret",
        "regcred",
        "--job-name",
        "jn",
        "--service-account-name",
        "sa",
        "--timeout",
        "10m",
        "--reach-timeout",
        "3s",
        "--clean-stale",
        "--stale-after",
        "2h",
        "--require-gpu",
        "--skip-check",
        "dra-support",
        "--debug",
        "--log-json",
        # node health
        "--node-health",
        "--dcgm-image",
        "dcgm:1",
        "--cuda-smoke-image",
        "cuda-sample:1",
        "--dcgm-diag-level",
        "2",
        "--gpu-health-window",
        "30s",
        "--gpu-health-threshold",
        "ecc_dbe_max=1",
        "--isolate-bad-nodes",
        # run history and baselines
        "--history",
        "history.db",
        "--history-keep",
        "5",
        "--normalize-gates",
        "--baseline",
        "auto",
        "--max-regression",
        "10",
        "--label-bad-nodes",
        "--taint-bad-nodes",
        # metrics
        "--metrics-file",
        "run.prom",
        "--pushgateway",
        "http://pushgateway.example:9091",
    ]
    ns = cli.build_parser().parse_args(argv)
    given = options.values_from(ns, VALIDATE)
    shared = [opt for opt in OPTIONS if opt.takes(PYTEST) and opt.takes(VALIDATE)]
    assert all(given[opt.name] not in (None, False) for opt in shared), (
        "the argv must give every shared option"
    )
    pytester.makefile(".yaml", **{"aicr-config": "kind: AICRConfig\n"})
    config = pytester.parseconfig(*options.resolve_validate(given, environ={})[1].pytest_args())
    received = options.values_from(config.option, PYTEST)
    assert {opt.name: received[opt.name] for opt in shared} == {opt.name: given[opt.name] for opt in shared}


def test_pytest_args_of_validate() -> None:
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml", "-o", "out.json", "--", "-n", "2"])
    _, run = options.resolve_validate(options.values_from(ns, VALIDATE), environ={})
    handed = run.given_with(ctrf_report="out.json", simulated="h100-eks-training")
    args = cli._pytest_args(handed, extra=ns.pytest_args)
    assert args[0] == "--recipe=r.yaml"
    assert "--aicr-ctrf-report=out.json" in args and "--aicr-simulated=h100-eks-training" in args
    assert args[-2:] == ["-n", "2"]
    assert not any(a.startswith("--aicr-ctrf-report") for a in cli._pytest_args(run, extra=()))
    # an empty value is not forwarded (validate itself rejects an empty --recipe with AICR's line)
    empty = {"recipe": "", "data": "", "snapshot": ""}
    assert options.resolve_validate(empty, environ={})[1].pytest_args() == []
    with pytest.raises(UsageError, match="pass pytest arguments after --"):
        cli._pytest_args(run, extra=["stray"])


def test_settings_precedence_flag_then_env_then_default() -> None:
    base = {"recipe": "r.yaml"}
    env = {"AICR_NVIDIA_SMI_IMAGE": "env/image:1"}
    image = options.build_run_settings({**base, "nvidia_smi_image": "flag/image:1"}, environ=env)
    assert image.nvidia_smi_image == "flag/image:1"
    assert options.build_run_settings(base, environ=env).nvidia_smi_image == "env/image:1"
    assert options.build_run_settings({**base, "nvidia_smi_image": ""}, environ=env).nvidia_smi_image == (
        "env/image:1"
    )
    assert options.build_run_settings(base, environ={}).nvidia_smi_image == DEFAULT_NVIDIA_SMI_IMAGE
    settings = options.build_run_settings({**base, "phase": ["performance"], "toleration": ["*"]}, environ={})
    assert settings.phases == ("performance",) and settings.phases_explicit
    tolerations = settings.placement.tolerations
    assert tolerations is not None and tolerations[0].operator == "Exists"
    assert (settings.no_cluster, settings.fail_fast, settings.no_cleanup, settings.simulated) == (
        False,
        False,
        False,
        None,
    )


def test_validate_only_defaults_resolve() -> None:
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml"])
    run = options.resolved(options.values_from(ns, VALIDATE), VALIDATE, environ={})
    assert run["fail_on_error"] is True and run["output"] == "-" and run["fault"] is None
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml", "--fail-on-error=false"])
    assert options.resolved(options.values_from(ns, VALIDATE), VALIDATE, environ={})["fail_on_error"] is False
    ns = cli.build_parser().parse_args(["validate", "-r", "r.yaml", "--fail-on-error"])
    assert options.resolved(options.values_from(ns, VALIDATE), VALIDATE, environ={})["fail_on_error"] is True


#: the argv that reaches each subcommand's parser
COMMAND_ARGV: dict[EntryPoint, list[str]] = {
    options.PROGRAM: [],
    options.SIMULATE: ["simulate"],
    options.RECIPE: ["recipe"],
    options.SNAPSHOT: ["snapshot"],
    options.EVIDENCE_VERIFY: ["evidence", "verify"],
    options.PARSE_NCCL: ["parse", "nccl"],
    options.PARSE_AIPERF: ["parse", "aiperf"],
    options.CNCF_CHECK: ["cncf", "check"],
    options.PARSE_DCGM: ["parse", "dcgm"],
    options.HISTORY: ["history"],
    options.COMPARE: ["compare"],
    options.SCHEDULE: ["schedule"],
}


def command_help(capsys: pytest.CaptureFixture[str], entry_point: EntryPoint) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser().parse_args([*COMMAND_ARGV[entry_point], "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_every_subcommand_lists_exactly_its_table_entries(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert set(COMMAND_ARGV) == set(options.COMMANDS)
    for entry_point in options.COMMANDS:
        text = command_help(capsys, entry_point)
        blocks = option_blocks(text)
        declared = [opt for opt in options.entries(entry_point) if not opt.positional]
        assert set(blocks) - {("-h", "--help")} == {opt.flags_for(entry_point) for opt in declared}
        for opt in declared:
            assert squash(opt.help) in squash(blocks[opt.flags_for(entry_point)].body), opt.name
        for opt in options.entries(entry_point):
            if opt.positional:
                assert re.search(rf"^  {opt.name}\b", text, re.M), f"{entry_point}: {opt.name} not listed"


def test_only_the_table_declares_arguments() -> None:
    package = options.__file__.rsplit("/", 2)[0]
    found = []
    for path in sorted(Path(package).rglob("*.py")):
        if path.parent.name == "options" and path.parent.parent.name == "plugin":
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path}: {m.group()}" for m in re.finditer(r"\.(add_argument|addoption)\(", text)]
    assert found == []


def snapshot_values(argv: list[str], environ: dict[str, str] | None = None) -> dict[str, object]:
    ns = cli.build_parser().parse_args(["snapshot", *argv])
    return options.command_values(ns, options.SNAPSHOT, environ=environ or {})


def test_a_subcommand_value_is_the_flag_then_its_env_var_then_its_default() -> None:
    assert snapshot_values([])["namespace"] == options.SNAPSHOT_NAMESPACE
    assert snapshot_values([], {"AICR_NAMESPACE": "gpu"})["namespace"] == "gpu"
    assert snapshot_values(["-n", "team"], {"AICR_NAMESPACE": "gpu"})["namespace"] == "team"
    # an empty flag is kept for the subcommand to judge; an empty env var is unset
    assert snapshot_values(["--image="], {"AICR_NVIDIA_SMI_IMAGE": "x"})["image"] == ""
    assert snapshot_values([], {"AICR_NVIDIA_SMI_IMAGE": ""})["image"] == DEFAULT_NVIDIA_SMI_IMAGE
    # a bool flag: bare, =value, the env var through the same bool parser
    assert snapshot_values(["--require-gpu"])["require_gpu"] is True
    assert snapshot_values(["--privileged=false"])["privileged"] is False
    assert snapshot_values([])["privileged"] is True
    assert snapshot_values([], {"AICR_REQUIRE_GPU": "yes"})["require_gpu"] is True
    assert snapshot_values([], {"AICR_REQUIRE_GPU": " "})["require_gpu"] is False
    with pytest.raises(UsageError, match=r'^invalid AICR_REQUIRE_GPU="maybe" \(use true or false\)$'):
        snapshot_values([], {"AICR_REQUIRE_GPU": "maybe"})
    # single-value flags: given once, unwrapped; twice, refused before any env var is read
    assert snapshot_values(["--timeout", "90s"])["timeout"] == "90s"
    with pytest.raises(UsageError, match=r"^flag --max-nodes-per-entry can only be specified once$"):
        snapshot_values(["--max-nodes-per-entry", "1", "--max-nodes-per-entry=2"], {"AICR_REQUIRE_GPU": "?"})
    # repeatable flags stay lists
    assert snapshot_values(["--toleration", "*", "--toleration", "a:NoSchedule"])["toleration"] == [
        "*",
        "a:NoSchedule",
    ]


def test_an_alias_given_twice_is_named_by_the_long_flag() -> None:
    ns = cli.build_parser().parse_args(["recipe", "--gpu", "h100", "--accelerator", "h200"])
    with pytest.raises(UsageError, match=r"^flag --accelerator can only be specified once$"):
        options.command_values(ns, options.RECIPE)


PLACEMENT_FLAGS = [
    *("--node-selector", "a=b"),
    *("--toleration", "k=v:NoSchedule"),
    *("--image-pull-secret", "regcred"),
]


def test_the_placement_flags_make_one_frozen_value_that_checks_read() -> None:
    values = {"recipe": "r.yaml", "node_selector": ["a=b"], "toleration": ["k=v:NoSchedule"]}
    settings = options.build_run_settings({**values, "image_pull_secret": ["regcred", ""]}, environ={})
    placement = settings.placement
    assert placement == Placement(
        node_selector={"a": "b"},
        tolerations=(Toleration(key="k", value="v", effect="NoSchedule"),),
        image_pull_secrets=("regcred",),
        namespace="aicr-validation",
    )
    k8s = {"operator": "Equal", "key": "k", "value": "v", "effect": "NoSchedule"}
    assert placement.tolerations_k8s() == (k8s,)
    with pytest.raises(pydantic.ValidationError):
        placement.namespace = "elsewhere"  # type: ignore[misc]
    check = CheckContext(name="gpu", phase="deployment", timeout_s=1, constraints=[], placement=placement)
    assert (check.node_selector, check.tolerations) == ({"a": "b"}, placement.tolerations)
    assert CheckContext(name="x", phase="deployment", timeout_s=1, constraints=[]).tolerations is None


def test_validate_hands_the_snapshot_capture_the_runs_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_pytest.snapshot import capture

    seen: dict[str, object] = {}

    def fake_capture(**kwargs: object) -> tuple[None, int]:
        seen.update(kwargs)
        return None, 8

    monkeypatch.setattr(capture, "capture_for_validate", fake_capture)
    monkeypatch.delenv("AICR_NAMESPACE", raising=False)
    assert cli.main(["validate", "-r", "r.yaml", *PLACEMENT_FLAGS, "-n", "team"]) == 8
    given = {"recipe": "r.yaml", "node_selector": ["a=b"], "toleration": ["k=v:NoSchedule"]}
    expected = options.build_run_settings(
        {**given, "image_pull_secret": ["regcred"], "namespace": "team"}, environ={}
    ).placement
    assert seen["placement"] == expected and expected.namespace == "team"
