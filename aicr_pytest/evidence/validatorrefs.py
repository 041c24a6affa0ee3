"""Which validator image references today's AICR accepts in a recipe-evidence attestation.

AICR (``--allow-mutable-validator-tags`` in ``docs/user/cli-reference.md`` and ``pkg/cli/validate.go``)
refuses to emit an attestation when a validator image is a mutable reference: the predicate names
the validators that ran by reference alone, so a moving tag (``:edge``, ``:latest``) would let the
bundle later point at different validator code.  A reference is immutable when it is

* digest-pinned (``name@sha256:<64 hex>``, any registry), or
* under ``ghcr.io/nvidia/aicr-validators/`` with a CI-frozen tag: ``:vX.Y.Z`` (with an optional
  pre-release), ``:sha-<40 hex commit>`` or ``:uat-<run id>``.

A tag's syntax proves nothing elsewhere (a mirror can repoint its ``:v1.0.0``), so any other
registry needs a digest.  aicr-pytest runs every check in-process and runs no validator image, so
its own bundles record none (``validatorImages: null``) and the rule never refuses them; it applies
to whatever validator references an emission is given (:func:`mutable_refs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

#: the only namespace whose tag conventions AICR's release workflows enforce
FROZEN_NAMESPACE: Final = "ghcr.io/nvidia/aicr-validators/"

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_FROZEN_TAG = re.compile(
    r"v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?"  # vX.Y.Z and pre-releases
    r"|sha-[0-9a-f]{40}"  # a full commit
    r"|uat-[0-9A-Za-z][0-9A-Za-z._-]*"  # a UAT run id
)

MSG_MUTABLE: Final = (
    "refusing to emit the attestation: validator image {refs} is a mutable reference (the predicate "
    "names validators by reference, so a moving tag could later resolve to different code); pin it "
    "by digest or use an immutable ghcr.io/nvidia/aicr-validators/ tag, or pass "
    "--allow-mutable-validator-tags for disposable evidence"
)


def is_immutable(ref: str) -> bool:
    """Whether ``ref`` is digest-pinned, or a frozen tag under :data:`FROZEN_NAMESPACE`."""
    ref = ref.strip()
    if _DIGEST.search(ref):
        return True
    if not ref.lower().startswith(FROZEN_NAMESPACE):
        return False
    last = ref.rsplit("/", 1)[-1]
    _, sep, tag = last.partition(":")
    return bool(sep) and _FROZEN_TAG.fullmatch(tag) is not None


def mutable_refs(refs: Iterable[str]) -> list[str]:
    """The references of ``refs`` that are not immutable, in order, each once."""
    return list(dict.fromkeys(r for r in refs if not is_immutable(r)))


def refusal(refs: Iterable[str]) -> str | None:
    """The one-line refusal for ``refs`` (``None``: every reference is immutable)."""
    bad = mutable_refs(refs)
    return MSG_MUTABLE.format(refs=", ".join(bad)) if bad else None


__all__ = ["FROZEN_NAMESPACE", "MSG_MUTABLE", "is_immutable", "mutable_refs", "refusal"]
