"""``check-nvidia-smi``'s host-driver floor: the recipe's ``Deployment.gpu-driver.version``.

Upstream AICR added it for platforms whose host manages the driver (GKE COS, A4X Max: the GPU
Operator's ``driver.enabled`` is false, so its version gates nothing): AICR #1995, PR #2257,
``validators/deployment/nvidia_smi.go`` (repository NVIDIA/aicr). Its rules, which we follow:

* no constraint in the recipe: the check keeps its banner-presence behaviour and invents no floor;
* a constraint is evaluated on every verified node against the driver version the ``nvidia-smi``
  banner prints (``Driver Version:``, or ``KMD Version:`` on renamed banners, any case; at most three
  numeric parts, and a version followed by anything but whitespace, ``|`` or the end, such as
  ``580.95.05.1`` or ``580.95.05-rc1``, is unreadable rather than truncated into a false pass);
* an unreadable banner under a constraint fails the node (``NOT_FOUND``), a version below the floor
  fails it naming node and version, an unusable expression is ``INVALID_REQUEST``;
* a constraint that cannot be measured at all (no GPU nodes, all cordoned, all busy) fails the
  check instead of skipping it: a declared gate must not pass unenforced.

The value needs an operator to act as a floor (``>= 580.95.05``); a bare version is an exact match,
as everywhere in the constraint language (:mod:`aicr_pytest.core.constraints`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aicr_pytest.core import constraints

CONSTRAINT = "Deployment.gpu-driver.version"
DRIVER_FLOOR_CONSTRAINT = CONSTRAINT  # the name the package re-exports

MSG_UNMEASURABLE = (
    '[NOT_FOUND] Deployment.gpu-driver.version "{expr}" is set but the host driver version could not '
    "be measured ({reason})"
)
MSG_UNPARSABLE = (
    '[NOT_FOUND] Deployment.gpu-driver.version constraint "{expr}" is set but could not parse the host '
    "driver version from nvidia-smi on node {node}: {cause}"
)
CAUSE_NO_VERSION = "nvidia-smi output has no parseable Driver Version / KMD Version"
CAUSE_NOT_THREE_PARTS = "nvidia-smi driver version is not a three-component numeric field"
MSG_INVALID = "[INVALID_REQUEST] invalid Deployment.gpu-driver.version constraint: {err}"
MSG_EVAL_FAILED = (
    "[INTERNAL] Deployment.gpu-driver.version constraint evaluation failed on node {node}: {err}"
)
MSG_BELOW_FLOOR = (
    "[INTERNAL] host driver version {version} on node {node} does not satisfy "
    'Deployment.gpu-driver.version "{expr}"'
)
LINE_EVALUATED = "  {node}: host driver {version}, constraint {expr} → {passed}"

# horizontal whitespace only: a label split across lines, or a version on the next line, is no field
_BANNER_RE = re.compile(r"(?i)(?:driver|kmd)[ \t]+version:[ \t]*([0-9]+(?:\.[0-9]+){0,2})")
_TERMINATORS = frozenset("| \t\n\r")


class UnreadableDriver(ValueError):
    """The banner carries no usable driver version (the message is upstream's cause text)."""


def banner_driver_version(logs: str) -> str:
    """The host driver version the ``nvidia-smi`` banner in ``logs`` prints; raises
    :class:`UnreadableDriver` when there is none or it is longer than three numeric parts."""
    match = _BANNER_RE.search(logs)
    if match is None:
        raise UnreadableDriver(CAUSE_NO_VERSION)
    end = match.end(1)
    if end < len(logs) and logs[end] not in _TERMINATORS:
        raise UnreadableDriver(CAUSE_NOT_THREE_PARTS)
    return match.group(1)


@dataclass(frozen=True)
class FloorVerdict:
    """One node against the floor: ``error`` is ``None`` when it satisfies it; ``line`` is the
    evidence line (``None`` when the version could not be read or compared)."""

    error: str | None
    line: str | None = None
    version: str | None = None


def enforce_floor(expr: str, logs: str, node: str) -> FloorVerdict:
    """Evaluate the recipe's floor ``expr`` against the driver ``node``'s verify pod printed."""
    try:
        version = banner_driver_version(logs)
    except UnreadableDriver as err:
        return FloorVerdict(MSG_UNPARSABLE.format(expr=expr, node=node, cause=err))
    try:
        parsed = constraints.validate_expression(expr)
    except constraints.ExpressionError as err:
        return FloorVerdict(MSG_INVALID.format(err=err), version=version)
    try:
        passed = constraints.evaluate(parsed, version)
    except constraints.ConstraintError as err:
        return FloorVerdict(MSG_EVAL_FAILED.format(node=node, err=err), version=version)
    line = LINE_EVALUATED.format(node=node, version=version, expr=expr, passed="true" if passed else "false")
    if not passed:
        return FloorVerdict(MSG_BELOW_FLOOR.format(version=version, node=node, expr=expr), line, version)
    return FloorVerdict(None, line, version)


def unmeasurable(expr: str, reason: str) -> str:
    """The failure for a declared floor no node could be measured against (``reason``: why)."""
    return MSG_UNMEASURABLE.format(expr=expr, reason=reason)


__all__ = [
    "CAUSE_NOT_THREE_PARTS",
    "CAUSE_NO_VERSION",
    "CONSTRAINT",
    "DRIVER_FLOOR_CONSTRAINT",
    "LINE_EVALUATED",
    "MSG_BELOW_FLOOR",
    "MSG_EVAL_FAILED",
    "MSG_INVALID",
    "MSG_UNMEASURABLE",
    "MSG_UNPARSABLE",
    "FloorVerdict",
    "UnreadableDriver",
    "banner_driver_version",
    "enforce_floor",
    "unmeasurable",
]
