"""What the ``aicr validate`` drop-in flags decide before any check runs.

Plain functions over the loaded inputs, called by :func:`aicr_pytest.core.inputs.load_run_state`:

* ``--skip-check``: :func:`preflight_skip_checks` (AICR's guards: a name that matches no catalog
  check, or a list that empties a requested phase, is rejected; a name no requested phase declares
  is a warning); skipped checks are still reported, ``skipped`` with :data:`SKIP_CHECK_REASON` and
  CTRF ``extra.skipReason`` :data:`SKIP_CHECK_REASON_CODE`;
* ``--require-gpu``: :func:`require_gpu_result` (a snapshot without a GPU measurement fails the
  readiness pre-flight);
* the version-skew advisory: :func:`version_skew_warning`;
* unknown ``validation`` phase keys: :func:`unknown_phase_keys_error`; a recipe that declares no
  check at all: :data:`MSG_NO_CHECKS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from aicr_pytest.core import catalog, ctrfextra
from aicr_pytest.core.constraints import ConstraintResult
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import Snapshot

#: the message and the CTRF ``extra.skipReason`` code AICR records for a caller-withheld check
SKIP_CHECK_REASON: Final = (
    "skipped: named in skipChecks, so the caller declared this check out of scope for this run"
)
SKIP_CHECK_REASON_CODE: Final = ctrfextra.SKIP_NAMED_IN_SKIP_CHECKS
MSG_SKIP_UNKNOWN: Final = 'skipChecks entry "{name}" matches no validator in the catalog'
MSG_SKIP_EMPTIES: Final = (
    "skipChecks removes every declared check from phase {phase}; a phase with nothing left to run "
    "still reports passed, so drop the phase from the run instead of emptying it"
)
MSG_SKIP_INVALID: Final = "invalid skipChecks: {problems}"
MSG_SKIP_INERT: Final = (
    "skipChecks entry has no effect on this run: no requested phase declares it check={name}"
)

REQUIRE_GPU_NAME: Final = "--require-gpu"
MSG_NO_GPU: Final = "snapshot has no GPU measurement (--require-gpu)"

MSG_VERSION_SKEW: Final = (
    "version skew detected across validate inputs; mixing artifacts from different aicr versions "
    "can cause hard-to-debug validation failures binaryVersion={binary} recipeVersion={recipe} "
    "snapshotVersion={snapshot}"
)

#: the keys a recipe's ``validation`` block may carry (``readiness`` is schema-only upstream)
VALIDATION_KEYS: Final = ("readiness", "deployment", "performance", "conformance")
MSG_UNKNOWN_PHASE_KEY: Final = (
    'recipe {source}: unknown validation phase "{key}"; valid phases: readiness, deployment, performance, '
    "conformance"
)
MSG_NO_CHECKS: Final = "recipe declares no checks in any validation phase; nothing will be validated"


def preflight_skip_checks(
    skip: Sequence[str], declared: Mapping[str, Sequence[str]], phases: Sequence[str]
) -> list[str]:
    """Validate ``--skip-check`` names against the catalog and the requested phases.

    ``declared`` maps a phase to the checks the recipe declares for it.  Returns the warnings
    (inert names); raises :class:`UsageError` listing every problem at once.
    """
    if not skip:
        return []
    problems = [MSG_SKIP_UNKNOWN.format(name=n) for n in skip if n not in catalog.BY_NAME]
    acted: set[str] = set()
    for phase in phases:
        checks = list(declared.get(phase) or ())
        if not checks:
            continue
        kept = [c for c in checks if c not in skip]
        acted.update(c for c in checks if c in skip)
        if not kept:
            problems.append(MSG_SKIP_EMPTIES.format(phase=phase))
    if problems:
        raise UsageError(MSG_SKIP_INVALID.format(problems="; ".join(problems)))
    return [MSG_SKIP_INERT.format(name=n) for n in dict.fromkeys(skip) if n not in acted]


def snapshot_has_gpu(snapshot: Snapshot) -> bool:
    """Whether the snapshot carries a ``GPU`` measurement with at least one non-empty subtype."""
    for measurement in snapshot.measurements:
        if measurement.type == "GPU" and any(st.data or st.items for st in measurement.subtypes):
            return True
    return False


def require_gpu_result(snapshot: Snapshot | None) -> ConstraintResult | None:
    """The failing readiness result ``--require-gpu`` adds, or ``None`` when a GPU is there.

    No snapshot at all also fails (the run could not show a GPU).
    """
    if snapshot is not None and snapshot_has_gpu(snapshot):
        return None
    return ConstraintResult(
        name=REQUIRE_GPU_NAME,
        expected="a GPU measurement",
        actual="",
        passed=False,
        error=MSG_NO_GPU,
        severity="error",
    )


def is_release_version(version: str) -> bool:
    """An AICR release version: ``v`` and a digit first (AICR's builds: ``v0.12.0``), not ``dev``
    and not a ``-next`` snapshot build.  aicr-pytest stamps its own version without the ``v``
    (``0.1.0``): its numbers are not AICR's, so they are never compared."""
    return len(version) > 1 and version[0] == "v" and version[1].isdigit() and "-next" not in version


def version_skew_warning(binary: str, recipe: str, snapshot: str) -> str | None:
    """The advisory when two or more AICR release versions among the inputs differ (empty shows as
    ``unknown``); see :func:`is_release_version` for which versions count."""
    distinct = {v for v in (binary, recipe, snapshot) if is_release_version(v)}
    if len(distinct) < 2:
        return None
    return MSG_VERSION_SKEW.format(
        binary=binary or "unknown", recipe=recipe or "unknown", snapshot=snapshot or "unknown"
    )


def unknown_phase_keys_error(raw_validation: object, source: str) -> UsageError | None:
    """A UsageError naming the first unknown key of a recipe's ``validation`` map (``None``: all known)."""
    if not isinstance(raw_validation, dict):
        return None
    for key in raw_validation:
        if str(key) not in VALIDATION_KEYS:
            return UsageError(MSG_UNKNOWN_PHASE_KEY.format(source=source, key=key))
    return None


__all__ = [
    "MSG_NO_CHECKS",
    "MSG_NO_GPU",
    "MSG_SKIP_EMPTIES",
    "MSG_SKIP_INERT",
    "MSG_SKIP_INVALID",
    "MSG_SKIP_UNKNOWN",
    "MSG_UNKNOWN_PHASE_KEY",
    "MSG_VERSION_SKEW",
    "REQUIRE_GPU_NAME",
    "SKIP_CHECK_REASON",
    "SKIP_CHECK_REASON_CODE",
    "VALIDATION_KEYS",
    "is_release_version",
    "preflight_skip_checks",
    "require_gpu_result",
    "snapshot_has_gpu",
    "unknown_phase_keys_error",
    "version_skew_warning",
]
