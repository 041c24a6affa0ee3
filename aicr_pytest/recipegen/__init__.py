"""Recipe generation (``aicr-pytest recipe``): criteria → ``RecipeResult``, as AICR's ``aicr recipe``.

Pure rules over a data tree (:class:`aicr_pytest.core.datatree.DataTree`):

* :mod:`.spec` — overlay/mixin documents decoded like AICR's Go structs; the output encoding;
* :mod:`.criteria` — query parsing (aliases, values registered by overlays), matching, specificity;
* :mod:`.store` — walking the data tree for ``base.yaml``, overlays and mixins;
* :mod:`.merge` — the merge rules, mixins and their collision errors, dependencies, ``deploymentOrder``;
* :mod:`.build` — the algorithm: maximal leaves, the OS guard, chains, snapshot-aware exclusion, finalize;
* :mod:`.detect` — criteria detected from a snapshot, and the snapshot constraint evaluator;
* :mod:`.output` — YAML/JSON to a file, stdout or ``cm://namespace/name``;
* :mod:`.cli` — the subcommand's arguments and run.

It imports :mod:`aicr_pytest.core` only (and :mod:`aicr_pytest.kube`, lazily, for ``cm://``).
"""
