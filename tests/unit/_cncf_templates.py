"""Hand-made CNCF AI-conformance checklist templates for the submission-kit tests.

``V137`` is written here from what the program's v1.37 template is known to contain (the v1.36
categories and requirement ids, ``kubernetesVersion: v1.37``, and a new SHOULD requirement
``security.workload_sandboxing``); its descriptions are our own short texts, not the program's.
``ODD`` carries a requirement id nobody has seen, multi-line and look-alike strings (``0o17``,
``yes``, a trailing newline, a tab, non-ASCII), an extra key per entry and an extra top-level key,
to prove the filler keeps whatever a template says exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from aicr_pytest.evidence.cncf.product import ProductMetadata

#: the vendor metadata of the program's example (repoUrl and k8sConformanceUrl left out)
META: Final = ProductMetadata(
    platform_name="Turbo Encabulator",
    platform_version="v1.7.4",
    vendor_name="Yoyodyne",
    website_url="https://yoyo.example/turbo",
    documentation_url="https://yoyo.example/turbo/docs",
    product_logo_url="https://yoyo.example/turbo.svg",
    description="A superb distribution.",
    contact_email_address="turbo@yoyo.example",
)

#: the program's v1.36 template, in ``../shared/reference`` (compat tests only)
V136: Final = "cncf/KubernetesAIConformance-1.36.yaml"
#: a v1.36-shaped checklist written for these tests (the program's ids and levels, our descriptions)
CHECKLIST_136: Final = Path(__file__).resolve().parents[1] / "fixtures" / "cncf" / "checklist-v1.36.yaml"

V137: Final = """\
# a v1.37-shaped checklist (test data written for aicr-pytest)
metadata: {kubernetesVersion: v1.37, platformName: "[Platform Name]", platformVersion: "[Platform Version]",
  vendorName: "[Vendor Name]", websiteUrl: "[Website URL]", repoUrl: "[Repository URL]",
  documentationUrl: "[Documentation URL]", productLogoUrl: "[Documentation URL]",
  description: "[Description]", contactEmailAddress: "[Contact Email Address]"}
spec:
  accelerators:
    - {id: driver_runtime_management, description: "Drivers and runtimes verifiable.", level: SHOULD,
       status: "", evidence: [], notes: ""}
    - {id: gpu_sharing, description: "GPUs can be shared.", level: SHOULD, status: "", evidence: [],
       notes: ""}
    - {id: virtualized_accelerator, description: "vGPUs exposed.", level: SHOULD, status: "", evidence: [],
       notes: ""}
  networking:
    - {id: ai_inference, description: "Gateway API for inference.", level: MUST, status: "", evidence: [],
       notes: ""}
    - {id: advanced_inference_ingress, description: "Inference extension.", level: SHOULD, status: "",
       evidence: [], notes: ""}
    - {id: high_performance_networking, description: "RDMA exposed.", level: SHOULD, status: "",
       evidence: [], notes: ""}
    - {id: disaggregated_inference, description: "Prefill and decode apart.", level: SHOULD, status: "",
       evidence: [], notes: ""}
  schedulingOrchestration:
    - {id: gang_scheduling, description: "All or nothing.", level: MUST, status: "", evidence: [], notes: ""}
    - {id: cluster_autoscaling, description: "GPU node groups scale.", level: MUST, status: "", evidence: [],
       notes: ""}
    - {id: pod_autoscaling, description: "HPA on GPU metrics.", level: MUST, status: "", evidence: [],
       notes: ""}
  observability:
    - {id: accelerator_metrics, description: "Per-GPU metrics.", level: MUST, status: "", evidence: [],
       notes: ""}
    - {id: ai_service_metrics, description: "Workload metrics scraped.", level: MUST, status: "",
       evidence: [], notes: ""}
  security:
    - {id: secure_accelerator_access, description: "GPU access isolated.", level: MUST, status: "",
       evidence: [], notes: ""}
    - {id: workload_sandboxing, description: "Untrusted code sandboxed.", level: SHOULD, status: "",
       evidence: [], notes: ""}
  operator:
    - {id: robust_controller, description: "An AI operator works.", level: MUST, status: "", evidence: [],
       notes: ""}
"""

ODD: Final = """\
metadata:
  kubernetesVersion: v9.99
  platformName: "[Platform Name]"
  vendor_name: "[Vendor Name]"
  releaseTrain: 7
spec:
  frontier:
    - id: quantum_entanglement_scheduling
      description: |
        Line one: with a colon.
        Line two	with a tab, "quotes" and ünïcødé.
      level: MUST
      owner: nobody
      status: ""
      evidence: []
      notes: ""
    - id: gang_scheduling
      description: >-
        folded text
        that joins
      level: SHOULD
  accelerators:
    - id: secure_accelerator_access
      description: "0o17"
      level: MUST
      notes: "left by the vendor"
    - id: dra_support
      description: 'yes'
      level: SHOULD
extra: {kept: true}
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


__all__ = ["CHECKLIST_136", "META", "ODD", "V136", "V137", "write"]
