"""What the four deployment-phase checks share: the failure type, component refs, Go-style text.

Outcomes: a check function returns its pass message, raises :class:`CheckFailed` (an
``AssertionError``, so pytest reports ``failed``), :class:`~aicr_pytest.core.errors.CheckSkip`
(``skipped``) or :class:`~aicr_pytest.core.errors.Inconclusive` (``other``: the API could not answer).

Component refs may be plain dicts (recipe YAML keys: ``overrides``, ``expectedResources``,
``manifestFiles``, ``healthCheckAsserts``...) or :class:`aicr_pytest.core.recipe.ComponentRef` models;
:func:`enabled_refs` turns them into dicts (the code lives in :mod:`aicr_pytest.core.components`,
shared with the other families; re-exported here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aicr_pytest.core.components import enabled_refs, is_enabled, ref_dict
from aicr_pytest.core.errors import CheckFailed

log = logging.getLogger("aicr_pytest.deployment")

Emit = Callable[[str], None]


def _describe_error(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


__all__ = ["CheckFailed", "Emit", "enabled_refs", "is_enabled", "log", "ref_dict"]
