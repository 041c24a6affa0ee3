"""CNCF AI-conformance evidence: the files a CNCF submission is filed with.

Two producers write markdown into ``--evidence-dir``:

* :mod:`.collector` -- ``--cncf-submission [--feature F ...]``: one file per feature, each from the
  feature's behavioural check (the conformance phase's own ``run_<check>`` function) with exactly
  one ``**Result: PASS|SKIP|FAIL**`` verdict line (:mod:`.verdict`);
* :mod:`.renderer` -- ``--evidence-dir`` alone: after a normal run, one file per CNCF conformance
  check from its recorded artifacts, plus ``index.md``.

:mod:`.features` holds the nine features (names, aliases, files, requirement ids), :mod:`.markdown`
the file formats, :mod:`.secrets` what is scrubbed, :mod:`.settings` the options.  This package sits
above the check families (it calls the conformance checks) and below the plugin.

The submission kit (pure functions, for the program's checklist): :mod:`.checklist` loads a
version's template, :mod:`.requirements` maps its requirement ids to our checks and to the
program's automated test names, :mod:`.outcomes` gathers the run's verdicts, :mod:`.product`
fills ``PRODUCT.yaml``, :mod:`.hybrid` writes ``results/junit.xml`` and ``results/e2e.log``, and
:mod:`.offline_check` applies the program's submission rules to a ``PRODUCT.yaml``.
"""

from __future__ import annotations
