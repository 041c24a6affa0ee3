"""health.dcgm: levels, the ``dcgmi diag -j`` parser, the fail-closed verdict and ``parse dcgm``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _dcgm_docs import all_pass, diag_doc, dumps

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.health import dcgm
from aicr_pytest.health.common import HealthCheckFailed, HealthInconclusive

MEM_FAIL = ("Fail", [(84, "2 uncorrectable errors")])


def _diag(doc: dict[str, Any], node: str = "gpu-a") -> dcgm.DcgmDiag:
    return dcgm.parse_diag(dumps(doc), node)


def _schema(reference_dir: Path) -> dict[str, Any]:
    return json.loads((reference_dir / "dcgm" / "dcgm_diag_schema.json").read_text())  # type: ignore[no-any-return]


# --- levels -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "level"), [(1, 1), ("2", 2), (" 3 ", 3), (4, 4), ("quick", 1), ("medium", 2), ("XLONG", 4)]
)
def test_levels_accept_digits_and_dcgm_aliases(value: object, level: int) -> None:
    assert dcgm.diag_level(value).level == level


def test_level_budgets_grow_with_the_documented_durations() -> None:
    budgets = [dcgm.LEVELS[i].budget_s for i in (1, 2, 3, 4)]
    assert budgets == sorted(budgets) and len(set(budgets)) == 4
    assert dcgm.LEVELS[1].budget_s <= 300  # level 1 lasts seconds
    assert dcgm.LEVELS[3].budget_s >= 15 * 60  # DCGM documents about 15 minutes
    assert dcgm.LEVELS[4].budget_s >= 3600  # the extended suite: hours
    assert dcgm.diag_command(dcgm.diag_level("long")) == ["dcgmi", "diag", "-r", "3", "-j"]


@pytest.mark.parametrize("value", [0, 5, -1, True, "5", "", "fast", 1.0, None])
def test_bad_levels_are_one_usage_line(value: object) -> None:
    with pytest.raises(UsageError) as err:
        dcgm.diag_level(value)
    assert str(err.value) == (
        f"DCGM diagnostic level {value!r} is not valid (expected 1, 2, 3 or 4, or quick, medium, long, xlong)"
    )
    assert "\n" not in str(err.value)


# --- our documents are schema-valid -------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [
        all_pass(),
        diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL})]),
        diag_doc(runtime_error="Couldn't connect to the host engine"),
        diag_doc([("Integration", "pcie", {0: "Skip", 1: "Skip"})], serials=False),
    ],
)
@pytest.mark.compat
def test_builder_documents_match_the_dcgm_schema(reference_dir: Path, doc: dict[str, Any]) -> None:
    jsonschema.Draft7Validator(_schema(reference_dir)).validate(doc)


@pytest.mark.compat
def test_schema_rejects_what_the_parser_rejects(reference_dir: Path) -> None:
    bad = all_pass()
    del bad["DCGM Diagnostic"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(_schema(reference_dir)).validate(bad)
    with pytest.raises(dcgm.DcgmDocumentError):
        _diag(bad)


# --- parser -------------------------------------------------------------------------------------


def test_parse_reads_gpus_serials_tests_and_warnings() -> None:
    d = _diag(diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL})]))
    assert d.node == "gpu-a" and d.version == "4.2.3" and d.driver == "570.86.15"
    assert [(g.index, g.serial) for g in d.gpus] == [(0, "SN1000"), (1, "SN1001")]
    (test,) = d.tests
    assert (test.name, test.category, test.summary, test.ran) == ("memory", "Hardware", "fail", True)
    assert [(r.entity_id, r.status) for r in test.results] == [(0, "pass"), (1, "fail")]
    (w,) = test.results[1].warnings
    assert (w.error_id, w.text) == (84, "2 uncorrectable errors")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("Pass", "pass"),
        ("FAIL", "fail"),
        ("Warn", "warn"),
        ("Skip", "skip"),
        ("Not Run", "skip"),
        ("ok", "unknown"),
    ],
)
def test_status_text_is_read_case_insensitively(raw: str, status: str) -> None:
    assert dcgm.status_of(raw) == status


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "node n: not JSON (Expecting value at line 1 column 1)"),
        ("[1, 2]", "node n: not a DCGM diagnostic document (the top level is not an object)"),
        ('{"metadata": {}}', 'node n: not a DCGM diagnostic document (no "DCGM Diagnostic" object)'),
        (
            '{"DCGM Diagnostic": {}}',
            "node n: not a DCGM diagnostic document (neither test_categories nor runtime_error)",
        ),
        (
            '{"DCGM Diagnostic": {"test_categories": [{"category": "x", '
            '"tests": [{"name": "t", "results": []}]}]}}',
            "node n: not a DCGM diagnostic document (test 't' lacks test_summary.status)",
        ),
        (
            '{"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": [{"name": "t", '
            '"test_summary": {"status": "Pass"}, "results": [{"entity_id": 0}]}]}]}}',
            "node n: not a DCGM diagnostic document "
            "(test 't': a result lacks entity_group, entity_id or status)",
        ),
    ],
)
def test_parse_refuses_what_is_not_a_dcgm_diagnostic(text: str, message: str) -> None:
    with pytest.raises(dcgm.DcgmDocumentError) as err:
        dcgm.parse_diag(text, "n")
    assert str(err.value) == message
    assert isinstance(err.value, Inconclusive)


# --- verdict ------------------------------------------------------------------------------------


def test_all_pass_passes() -> None:
    msg = dcgm.check_diagnostics([_diag(all_pass(), "a"), _diag(all_pass(), "b")], level=1)
    assert (
        msg == "DCGM diagnostics level 1 passed on 2 nodes: 4 GPUs, every test that ran passed (4 tests ran)"
    )


def test_a_failed_gpu_names_node_gpu_serial_test_and_warning() -> None:
    doc = diag_doc(
        [("Hardware", "memory", {0: "Pass", 1: MEM_FAIL}), ("Hardware", "pcie", {0: "Pass", 1: "Pass"})]
    )
    with pytest.raises(HealthCheckFailed) as err:
        dcgm.check_diagnostics([_diag(all_pass(), "gpu-a"), _diag(doc, "gpu-b")])
    assert str(err.value) == (
        "node gpu-b GPU 1 (serial SN1001): memory failed: DCGM error 84: 2 uncorrectable errors"
    )


def test_warn_fails_unless_allowed() -> None:
    doc = diag_doc(
        [("Hardware", "pcie", {0: "Pass", 1: ("Warn", [(29, "PCIe replay rate high")])})], serials=False
    )
    with pytest.raises(HealthCheckFailed) as err:
        dcgm.check_diagnostics([_diag(doc)])
    assert (
        str(err.value)
        == "node gpu-a GPU 1 (serial not reported): pcie warned: DCGM error 29: PCIe replay rate high"
    )
    assert dcgm.check_diagnostics([_diag(doc)], allow_warn=True).startswith(
        "DCGM diagnostics passed on 1 node"
    )


def test_failure_outranks_inconclusive_and_keeps_its_lines() -> None:
    broken = _diag(diag_doc(runtime_error="host engine not running"), "gpu-c")
    failed = _diag(diag_doc([("Hardware", "memory", {0: MEM_FAIL, 1: "Pass"})]), "gpu-b")
    with pytest.raises(HealthCheckFailed) as err:
        dcgm.check_diagnostics([broken, failed], inconclusive=["node gpu-d: the diagnostics pod never ran"])
    assert err.value.lines == (
        "node gpu-b GPU 0 (serial SN1000): memory failed: DCGM error 84: 2 uncorrectable errors",
        "inconclusive: node gpu-d: the diagnostics pod never ran",
        "inconclusive: node gpu-c: dcgmi diag runtime error: host engine not running",
    )


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        (
            diag_doc(runtime_error="host   engine\nnot running"),
            "node gpu-a: dcgmi diag runtime error: host engine not running",
        ),
        (
            diag_doc(
                [
                    ("Hardware", "memory", {0: "Skip", 1: "Skip"}),
                    ("Integration", "pcie", {0: "Not Run", 1: "Skip"}),
                ]
            ),
            "node gpu-a: no DCGM diagnostic test ran (every test was skipped)",
        ),
        (diag_doc([]), "node gpu-a: the DCGM diagnostic has no tests"),
        (
            diag_doc([("Hardware", "memory", {0: "Pass", 1: "Maybe"})]),
            "node gpu-a GPU 1 (serial SN1001): memory: unrecognised DCGM status 'Maybe'",
        ),
        (
            diag_doc([("Hardware", "memory", {0: "Pass", 1: "Skip"})]),
            "node gpu-a GPU 1 (serial SN1001): memory was skipped while it ran on other GPUs",
        ),
        (
            diag_doc([("Hardware", "memory", {0: "Pass"})], gpus=2),
            "node gpu-a GPU 1 (serial SN1001): no DCGM test ran on it",
        ),
    ],
)
def test_inconclusive_paths_are_never_a_pass(doc: dict[str, Any], line: str) -> None:
    with pytest.raises(HealthInconclusive) as err:
        dcgm.check_diagnostics([_diag(doc)])
    assert str(err.value) == line
    assert isinstance(err.value, Inconclusive)


def test_fewer_gpus_than_the_node_has_is_inconclusive() -> None:
    with pytest.raises(HealthInconclusive) as err:
        dcgm.check_diagnostics([_diag(all_pass(gpus=7), "gpu-a")], expected_gpus={"gpu-a": 8})
    assert str(err.value) == "node gpu-a: DCGM diagnosed 7 of 8 GPUs"
    assert dcgm.check_diagnostics([_diag(all_pass(gpus=8), "gpu-a")], expected_gpus={"gpu-a": 8})


def test_a_test_summary_failure_without_a_gpu_failure_still_fails() -> None:
    doc = diag_doc([("Hardware", "memory", {0: "Pass", 1: "Pass"})])
    doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["test_summary"]["status"] = "Fail"
    with pytest.raises(HealthCheckFailed) as err:
        dcgm.check_diagnostics([_diag(doc)])
    assert str(err.value) == "node gpu-a: memory failed (test_summary 'Fail') though no GPU result failed"


def test_no_node_at_all_is_inconclusive() -> None:
    with pytest.raises(HealthInconclusive) as err:
        dcgm.check_diagnostics([])
    assert str(err.value) == "no DCGM diagnostic to judge (no node ran one)"


def test_a_non_gpu_entity_is_named_by_its_group() -> None:
    doc = all_pass()
    doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"].append(
        {"entity_group": "CPU", "entity_group_id": 7, "entity_id": 0, "status": "Fail"}
    )
    with pytest.raises(HealthCheckFailed) as err:
        dcgm.check_diagnostics([_diag(doc)])
    assert str(err.value) == "node gpu-a CPU 0: software failed: no warning text"


# --- parse dcgm ---------------------------------------------------------------------------------


def test_analyse_pass_document_and_table(tmp_path: Path) -> None:
    f = tmp_path / "gpu-a.json"
    f.write_text(dumps(all_pass(names=("software",))))
    doc = dcgm.analyse(f)
    assert (doc["node"], doc["verdict"], doc["exit_code"], doc["tests_ran"]) == ("gpu-a", "pass", 0, 1)
    assert doc["gpus"] == [
        {"index": 0, "serial": "SN1000", "device_id": "2330"},
        {"index": 1, "serial": "SN1001", "device_id": "2330"},
    ]
    assert dcgm.render_text(doc) == [
        "node gpu-a: DCGM 4.2.3, driver 570.86.15",
        "GPU  serial  test      result  warning",
        "0    SN1000  software  Pass",
        "1    SN1001  software  Pass",
        "result: pass (1 test ran on 2 GPUs, all passed)",
    ]
    json.dumps(doc)  # the --json document is plain JSON


def test_analyse_failure_names_gpu_test_and_warning_and_exits_non_zero() -> None:
    text = dumps(diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL})]))
    doc = dcgm.analyse(text, node="gpu-b")
    assert doc["exit_code"] == 1 and doc["verdict"] == "fail"
    lines = dcgm.render_text(doc)
    assert lines[-2:] == [
        "FAIL: node gpu-b GPU 1 (serial SN1001): memory failed: DCGM error 84: 2 uncorrectable errors",
        "result: fail",
    ]
    assert "1    SN1001  memory  Fail    DCGM error 84: 2 uncorrectable errors" in lines


def test_analyse_all_skipped_exits_non_zero() -> None:
    doc = dcgm.analyse(dumps(diag_doc([("Hardware", "memory", {0: "Skip", 1: "Skip"})])), node="n")
    assert (doc["verdict"], doc["exit_code"]) == ("inconclusive", 1)
    assert dcgm.render_text(doc)[-2:] == [
        "INCONCLUSIVE: node n: no DCGM diagnostic test ran (every test was skipped)",
        "result: inconclusive",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            dumps(diag_doc(runtime_error="no GPUs found")),
            "DCGM diagnostic {path}: dcgmi diag reported a runtime error: no GPUs found",
        ),
        (
            '{"kind": "Pod"}',
            'DCGM diagnostic {path}: not a DCGM diagnostic document (no "DCGM Diagnostic" object)',
        ),
        ("garbage", "DCGM diagnostic {path}: not JSON (Expecting value at line 1 column 1)"),
    ],
)
def test_analyse_bad_documents_are_one_usage_line(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "diag.json"
    f.write_text(content)
    with pytest.raises(UsageError) as err:
        dcgm.analyse(str(f))
    assert str(err.value) == message.format(path=f)


def test_analyse_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^DCGM diagnostic .*nope\.json: no such file$"):
        dcgm.analyse(tmp_path / "nope.json")
    with pytest.raises(UsageError, match=r": is a directory$"):
        dcgm.analyse(tmp_path)


def test_run_parse_dcgm_json_and_text(tmp_path: Path) -> None:
    f = tmp_path / "gpu-b.json"
    f.write_text(dumps(diag_doc([("Hardware", "memory", {0: "Pass", 1: MEM_FAIL})])))
    out = io.StringIO()
    assert dcgm.run_parse_dcgm(str(f), "json", out) == 1
    assert json.loads(out.getvalue())["failures"][0].startswith(
        "node gpu-b GPU 1 (serial SN1001): memory failed"
    )
    out = io.StringIO()
    f.write_text(dumps(all_pass()))
    assert dcgm.run_parse_dcgm(str(f), "text", out) == 0
    assert out.getvalue().endswith("result: pass (2 tests ran on 2 GPUs, all passed)\n")
    with pytest.raises(UsageError, match="unknown format 'yaml'"):
        dcgm.run_parse_dcgm(str(f), "yaml", out)  # type: ignore[arg-type]
