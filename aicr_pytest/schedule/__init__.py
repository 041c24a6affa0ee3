"""``aicr-pytest schedule``: run aicr-pytest in the cluster on a schedule (a CronJob per cluster).

* :mod:`.defaults` — the namespace, cron expression and image a schedule gets by default;
* :mod:`.cron` — the five-field cron expression, checked (pure);
* :mod:`.imageref` — the runner image reference, checked; a digest pins it (pure);
* :mod:`.render` — the Namespace, ServiceAccount, least-privilege RBAC (from ``deploy/``), recipe
  and snapshot ConfigMaps and the CronJob, as plain dicts (pure);
* :mod:`.apply` — server-side apply of those objects, and ``--delete`` of exactly them (I/O);
* :mod:`.command` — the subcommand end to end: ``--dry-run`` prints the YAML and touches nothing.
"""

from __future__ import annotations
