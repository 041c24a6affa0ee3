"""``aicr-pytest snapshot``: capture a live cluster's snapshot in AICR's format (``kind: Snapshot``).

The package map (pure modules first, then the one module that does I/O):

* :mod:`.measure` -- subtypes, measurements, the header; :class:`~.measure.Collected` (what was
  collected plus one warning per omitted measurement);
* :mod:`.apifacts` -- ``K8s.server|image|policy|node`` and ``NodeTopology.summary|taint|label`` from
  API objects;
* :mod:`.sections` -- the agent's sectioned log protocol; :file:`collect.sh` -- the agent itself, a
  POSIX shell collector delivered in a ConfigMap;
* :mod:`.osfacts`, :mod:`.gpu` -- ``OS.grub|sysctl|kmod|release``, ``SystemD.<unit>``,
  ``GPU.hardware`` and ``GPU.smi`` from the texts a node shows; :mod:`.nodefacts` -- all of them from
  the parsed log, failing closed per section; :mod:`.network` -- ``NetworkTopology`` (identity,
  capabilities, per-PF items, kernel modules) from the agent's sysfs read;
* :mod:`.agent` -- the agent's Job and ConfigMap manifests and where it runs; :mod:`.agentflags` --
  the flags that shape its pod (runtime class, resources, names);
* :mod:`.output` -- ``--format`` and ``--output FILE|-|cm://ns/name``; :mod:`.template` --
  ``--template`` (a sandboxed Jinja2 template over the document);
* :mod:`.cluster` -- the capture against a live cluster (API reads, the run-scoped agent, cleanup);
* :mod:`.cli` -- the subcommand's flags and run.
"""
