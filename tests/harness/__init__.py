"""The repository's own real-control-plane harness (not shipped in the wheel).

A real kube-apiserver + controller-manager + scheduler + kwok (:mod:`.controlplane`), the test
controllers that play the operators AICR's checks drive on it (Kubeflow Trainer/JobSet and the NCCL
launcher, the DRA driver's ComputeDomains, the Dynamo operator, nvidia-smi and probe pods), and one
surface over it and the fake cluster for backend-parametrized scenarios (:mod:`.backends`,
:mod:`.backend_fixtures`). ``tests/conftest.py`` wires the fixtures in; imports go through the
repository root (``from tests.harness.backends import K8sBackend``), which pytest puts on
``sys.path`` for the root ``conftest.py``.
"""
