"""Recipe evidence bundles: ``--emit-attestation``, keyless signing, OCI push and ``evidence verify``.

Pure modules (bundle layout, minimization, manifest, predicate, pointer, BOM, fingerprint) plus the
Sigstore and registry clients.  Heavy third-party packages (sigstore, oras, cyclonedx) are imported
only when a run actually emits or verifies evidence.  Entry points use :mod:`.options` (the option
table), :mod:`.session` (``configure`` before the run, ``finish`` after it) and :mod:`.cli`.
"""

from __future__ import annotations

from aicr_pytest.evidence.options import OPTIONS

OPTION_DESTS: tuple[str, ...] = tuple(spec.dest for spec in OPTIONS)

__all__ = ["OPTIONS", "OPTION_DESTS"]
