"""Recipe evidence bundles: ``--emit-attestation``, keyless signing, OCI push and ``evidence verify``.

Pure modules (bundle layout, minimization, manifest, predicate, pointer, BOM, fingerprint) plus the
Sigstore and registry clients.  Heavy third-party packages (sigstore, oras, cyclonedx) are imported
only when a run actually emits or verifies evidence.  The options are entries of the option table
(:mod:`aicr_pytest.plugin.options`); entry points use :mod:`.settings` (what the options ask for),
:mod:`.session` (``configure`` before the run, ``finish`` after it) and :mod:`.cli`.
"""

from __future__ import annotations
