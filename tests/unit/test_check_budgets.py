"""Per-check budgets: the catalog's, overridden per check by a ``--data`` catalog overlay
(core.budgets), and enforced while a check runs (plugin.budget): a blocking wait is cut short at
the budget, ``except Exception`` cannot swallow it, and nothing fires after the block."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import budgets, catalog
from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin.budget import CheckTimeout, enforced

HINT = " (such as 2m or 90s)"


def _doc(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"validators": list(entries)}


def test_an_overlay_entry_changes_only_its_checks_budget() -> None:
    doc = _doc({"name": "operator-health", "timeout": "1m30s"}, {"name": "dra-support"})
    assert budgets.overlay_budgets(doc) == {"operator-health": 90.0}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        (None, {}),
        ({}, {}),
        (_doc({"name": "operator-health", "timeout": "0"}), {"operator-health": 300.0}),  # AICR: 0 -> 5m
        (_doc({"name": "not-a-check-of-ours", "timeout": "1s"}), {}),
        (_doc("junk", {"timeout": "1s"}), {}),
        (_doc({"name": "gpu-operator-version", "timeout": "250ms"}), {"gpu-operator-version": 0.25}),
    ],
    ids=["no-file", "empty", "zero-is-default", "unknown-name", "malformed-entries", "sub-second"],
)
def test_overlay_budgets(doc: dict[str, Any] | None, want: dict[str, float]) -> None:
    assert budgets.overlay_budgets(doc) == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2 minutes", 'validator "operator-health": timeout "2 minutes" is not a Go duration' + HINT),
        (120, 'validator "operator-health": timeout 120 is not a Go duration' + HINT),
        ("-1m", 'validator "operator-health": timeout "-1m" is negative'),
    ],
)
def test_a_bad_overlay_timeout_is_one_usage_line(value: object, message: str) -> None:
    with pytest.raises(UsageError) as err:
        budgets.overlay_budgets(_doc({"name": "operator-health", "timeout": value}))
    assert str(err.value) == "validators/catalog.yaml: " + message


def test_check_budgets_layer_the_data_tree_over_the_catalog(tmp_path: Path) -> None:
    (tmp_path / "validators").mkdir()
    (tmp_path / "registry.yaml").write_text("components: []\n")
    overlay = "validators:\n  - {name: operator-health, timeout: 1s}\n"
    (tmp_path / "validators" / "catalog.yaml").write_text(overlay)
    got = budgets.check_budgets(DataTree(embedded_data_root(), tmp_path))
    assert got["operator-health"] == 1.0
    assert got["expected-resources"] == float(catalog.BY_NAME["expected-resources"].timeout_s)
    assert set(got) == set(catalog.BY_NAME)
    assert budgets.check_budgets(DataTree(embedded_data_root(), None))["operator-health"] == float(
        catalog.BY_NAME["operator-health"].timeout_s
    )


@pytest.mark.parametrize(("seconds", "line"), [(1, "1s"), (120, "2m0s"), (0.5, "500ms"), (3900, "1h5m0s")])
def test_the_timeout_line_names_the_budget_as_go_prints_it(seconds: float, line: str) -> None:
    assert budgets.exceeded_message(seconds) == f"timeout: validator did not complete within {line}"


def test_a_blocking_wait_is_cut_short_at_the_budget() -> None:
    started = time.monotonic()
    with pytest.raises(CheckTimeout, match=r"^within budget$"), enforced(0.3, "within budget"):
        try:
            time.sleep(30)
        except Exception:  # what a check's own error handling does
            pytest.fail("the budget was swallowed by except Exception")
    assert time.monotonic() - started < 5


def test_a_cut_ends_a_blocking_wait_at_once_with_its_own_line() -> None:
    """The cluster found unreachable mid-check (kube.reach): the check ends now, with that line,
    whether or not it has a budget, even from another thread."""
    import threading

    for seconds in (None, 600.0):
        started = time.monotonic()
        with (
            pytest.raises(CheckTimeout, match=r"^cannot reach the cluster$"),
            enforced(seconds, "late") as cut,
        ):
            threading.Timer(0.05, cut, args=("cannot reach the cluster",)).start()
            try:
                time.sleep(30)
            except Exception:
                pytest.fail("the cut was swallowed by except Exception")
        assert time.monotonic() - started < 5


def test_a_check_within_its_budget_is_left_alone_and_nothing_fires_later() -> None:
    with enforced(0.2, "late"):
        time.sleep(0.01)
    time.sleep(0.4)  # past the budget, outside the block: no CheckTimeout
    with enforced(None, "none"), enforced(0, "zero"):
        time.sleep(0.01)


def test_outside_the_main_thread_the_budget_still_ends_the_check() -> None:
    seen: list[str] = []

    def check() -> None:
        try:
            with enforced(0.2, "in a thread"):
                for _ in range(300):
                    time.sleep(0.01)
        except CheckTimeout as exc:
            seen.append(str(exc))

    worker = threading.Thread(target=check)
    worker.start()
    worker.join(10)
    assert seen == ["in a thread"]
