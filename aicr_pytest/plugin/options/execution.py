"""Rows: how a validation run executes (phases, placement of its pods, timeouts, node health,
logging)."""

from __future__ import annotations

from aicr_pytest.core.defaults import (
    DEFAULT_CUDA_SMOKE_IMAGE,
    DEFAULT_DCGM_IMAGE,
    DEFAULT_NVIDIA_SMI_IMAGE,
    DEFAULT_TIMEOUT,
)
from aicr_pytest.plugin.options.spec import PYTEST, VALIDATE, Option

NODE_SELECTOR = Option(
    "node_selector",
    ("--node-selector",),
    "node selector for inner GPU workloads (repeatable)",
    setting="placement.node_selector",
    action="append",
    metavar="KEY=VALUE",
    config_key="agent.nodeSelector",
)

TOLERATION = Option(
    "toleration",
    ("--toleration",),
    "toleration for inner GPU workloads (repeatable; '*' tolerates all)",
    setting="placement.tolerations",
    action="append",
    metavar="KEY=VALUE:EFFECT",
    config_key="agent.tolerations",
)

IMAGE = Option(
    "image",
    ("--image",),
    "snapshot agent image (when --snapshot is omitted); aicr-pytest runs no validator container, "
    "so this is the only image it sets",
    setting="image",
    default_text="--nvidia-smi-image",
    env="AICR_VALIDATOR_IMAGE",
    metavar="IMAGE",
    config_key="agent.image",
)

IMAGE_PULL_SECRET = Option(
    "image_pull_secret",
    ("--image-pull-secret",),
    "image pull secret added to every pod the run creates (repeatable)",
    setting="placement.image_pull_secrets",
    action="append",
    metavar="NAME",
    config_key="agent.imagePullSecrets",
)

JOB_NAME = Option(
    "job_name",
    ("--job-name",),
    "snapshot agent Job name prefix (the run id is appended); checks run in-process, no validator Job",
    setting="job_name",
    default_text="aicr-snapshot",
    metavar="NAME",
    config_key="agent.jobName",
)

SERVICE_ACCOUNT_NAME = Option(
    "service_account_name",
    ("--service-account-name",),
    "accepted for aicr compatibility, no effect: checks run in-process as your kubeconfig identity",
    setting="service_account_name",
    metavar="NAME",
    config_key="agent.serviceAccountName",
)

TIMEOUT = Option(
    "timeout",
    ("--timeout",),
    "Go duration (5m, 90s, 1h30m): how long to wait for the snapshot agent; "
    "given explicitly, it also bounds the whole run (exit 5)",
    setting="timeout_s",
    default=DEFAULT_TIMEOUT,
    metavar="DURATION",
    config_key="execution.timeout",
)

REQUIRE_GPU = Option(
    "require_gpu",
    ("--require-gpu",),
    "the snapshot agent requests an nvidia.com/gpu, and a snapshot without a GPU fails the pre-flight",
    setting="require_gpu",
    action="store_true",
    default=False,
    env="AICR_REQUIRE_GPU",
    config_key="agent.requireGpu",
)

NO_CLEANUP = Option(
    "no_cleanup",
    ("--no-cleanup",),
    "keep the objects a run creates and print kubectl commands to inspect/delete them",
    setting="no_cleanup",
    action="store_true",
    default=False,
    config_key="execution.noCleanup",
)

REACH_TIMEOUT = Option(
    "reach_timeout",
    ("--reach-timeout",),
    "Go duration: the bound of the one request that checks the cluster can be reached before any "
    "check (refused, DNS, TLS, 401, 403, 5xx, 429 or silent: one line, every check other)",
    setting="reach_timeout_s",
    default="10s",
    metavar="DURATION",
    config_key="execution.reachTimeout",
)

CLEAN_STALE = Option(
    "clean_stale",
    ("--clean-stale",),
    "delete what earlier aicr-pytest runs left in the cluster once idle past --stale-after (never a "
    "run that may still be going); without it they are only named",
    setting="clean_stale",
    action="store_true",
    default=False,
    config_key="execution.cleanStale",
)

STALE_AFTER = Option(
    "stale_after",
    ("--stale-after",),
    "Go duration: how long an earlier run's newest object must be idle before --clean-stale deletes "
    "its objects (at least the longest check budget)",
    setting="stale_after_s",
    default="1h",
    metavar="DURATION",
    config_key="execution.staleAfter",
)

PHASE = Option(
    "phase",
    ("--phase",),
    "deployment|conformance|performance|all; repeatable, run in the order given",
    setting="phases",
    action="append",
    default_text="all",
    metavar="PHASE",
    config_key="execution.phases",
)

NODE_HEALTH = Option(
    "node_health",
    ("--node-health",),
    "add the node-health checks (gpu-inventory, gpu-diagnostics, gpu-health, gpu-cuda-smoke) to "
    "the deployment phase; an aicr-pytest extension (a recipe may also name them; AICR's aicr "
    "rejects that recipe)",
    setting="node_health",
    action="store_true",
    default=False,
    config_key="execution.nodeHealth",
)

LABEL_BAD_NODES = Option(
    "label_bad_nodes",
    ("--label-bad-nodes",),
    "after the run, label every node a node-health check or bad-node isolation named "
    "aicr.run/validation=failed (with the reason in the aicr.run/validation-reason annotation) and the "
    "nodes it checked and found healthy aicr.run/validation=passed; opt-in: needs node patch",
    setting="label_bad_nodes",
    action="store_true",
    default=False,
    config_key="execution.labelBadNodes",
)

TAINT_BAD_NODES = Option(
    "taint_bad_nodes",
    ("--taint-bad-nodes",),
    "after the run, taint the nodes a node-health check or bad-node isolation named "
    "aicr.run/validation=failed:NoSchedule and remove that taint from checked nodes that now pass; "
    "opt-in: needs node patch",
    setting="taint_bad_nodes",
    action="store_true",
    default=False,
    config_key="execution.taintBadNodes",
)

#: the rows, in the order the help lists them
ROWS: tuple[Option, ...] = (
    PHASE,
    Option(
        "no_cluster",
        ("--no-cluster",),
        "offline: evaluate the snapshot only, skip behavioral checks (needs --snapshot)",
        setting="no_cluster",
        action="store_true",
        default=False,
        config_key="execution.noCluster",
    ),
    Option(
        "fail_fast",
        ("--fail-fast",),
        "skip later phases after a phase ends failed or other",
        setting="fail_fast",
        action="store_true",
        default=False,
        config_key="execution.failFast",
    ),
    Option(
        "fail_on_error",
        ("--fail-on-error",),
        "exit 8 when a phase fails; --fail-on-error=false reports only",
        setting=None,
        entry_points=(VALIDATE,),
        action="bool",
        default=True,
        metavar="BOOL",
        config_key="execution.failOnError",
    ),
    Option(
        "skip_check",
        ("--skip-check",),
        "report this recipe check as skipped instead of running it (repeatable; CTRF extra.skipReason)",
        setting="skip_checks",
        action="append",
        metavar="NAME",
        config_key="execution.skipChecks",
    ),
    Option(
        "no_bundled_checks",
        ("--no-bundled-checks",),
        "collect only the given paths, not the checks bundled with aicr-pytest",
        setting=None,
        entry_points=(PYTEST,),
        action="store_true",
        default=False,
    ),
    NODE_SELECTOR,
    TOLERATION,
    IMAGE,
    IMAGE_PULL_SECRET,
    JOB_NAME,
    SERVICE_ACCOUNT_NAME,
    TIMEOUT,
    REQUIRE_GPU,
    NO_CLEANUP,
    REACH_TIMEOUT,
    CLEAN_STALE,
    STALE_AFTER,
    Option(
        "allow_fake_nodes",
        ("--allow-fake-nodes",),
        "accept pods on nodes KWOK marks as fake (kwok.x-k8s.io/node=fake) or whose GPUs a simulator "
        "stands in for (NVIDIA's NVML mock, Run:ai's fake-gpu-operator) as having run; without it a "
        "check whose pod ran there is other (no proof of execution)",
        setting="allow_fake_nodes",
        action="store_true",
        default=False,
        config_key="execution.allowFakeNodes",
    ),
    Option(
        "nvidia_smi_image",
        ("--nvidia-smi-image",),
        "CUDA image for check-nvidia-smi",
        setting="nvidia_smi_image",
        default=DEFAULT_NVIDIA_SMI_IMAGE,
        env="AICR_NVIDIA_SMI_IMAGE",
        metavar="IMAGE",
    ),
    # --- node health (gpu-inventory, gpu-diagnostics, gpu-health, gpu-cuda-smoke): read by
    # checks/deployment/test_node_health.py; the knobs are validated up front by
    # aicr_pytest.health.hooks ---------------------------------------------------------------------
    NODE_HEALTH,
    # --- NCCL bad-node isolation: read by checks/performance/test_nccl_all_reduce.py; refused up
    # front (aicr_pytest.core.inputs) when the run selects no NCCL check -------------------------
    Option(
        "isolate_bad_nodes",
        ("--isolate-bad-nodes",),
        "when an NCCL all-reduce check misses its floor or a worker fails, rerun it on node subsets "
        "(at most ceil(log2 n)+1 rounds) and name the suspect nodes; opt-in: reruns cost GPU time",
        setting="isolate_bad_nodes",
        action="store_true",
        default=False,
        config_key="execution.isolateBadNodes",
    ),
    # --- bad nodes labelled or tainted after the run (aicr_pytest.health.nodemarks); refused up
    # front (aicr_pytest.core.inputs) when no node-health check or bad-node isolation is selected -----
    LABEL_BAD_NODES,
    TAINT_BAD_NODES,
    Option(
        "dcgm_image",
        ("--dcgm-image",),
        "DCGM image for gpu-diagnostics' dcgmi diag pods, for air-gapped clusters",
        setting="dcgm_image",
        default=DEFAULT_DCGM_IMAGE,
        env="AICR_DCGM_IMAGE",
        metavar="IMAGE",
    ),
    Option(
        "cuda_smoke_image",
        ("--cuda-smoke-image",),
        "CUDA sample image of gpu-cuda-smoke's pods (its /cuda-samples/vectorAdd runs on each GPU), for "
        "air-gapped clusters or another CUDA version",
        setting="cuda_smoke_image",
        default=DEFAULT_CUDA_SMOKE_IMAGE,
        env="AICR_CUDA_SMOKE_IMAGE",
        metavar="IMAGE",
        config_key="execution.cudaSmokeImage",
    ),
    Option(
        "dcgm_diag_level",
        ("--dcgm-diag-level",),
        "dcgmi diag run level for gpu-diagnostics: 1 (seconds) to 4 (hours), or quick, medium, long, xlong",
        setting="dcgm_diag_level",
        default="1",
        env="AICR_DCGM_DIAG_LEVEL",
        metavar="LEVEL",
    ),
    Option(
        "gpu_health_window",
        ("--gpu-health-window",),
        "seconds (or a Go duration: 30s, 2m) between gpu-health's two DCGM exporter scrapes, at most 1h",
        setting="gpu_health_window",
        default_text="60s",
        env="AICR_GPU_HEALTH_WINDOW",
        metavar="DURATION",
    ),
    Option(
        "gpu_health_threshold",
        ("--gpu-health-threshold",),
        "a gpu-health threshold KEY=VALUE (repeatable): ecc_dbe_max, remapped_rows_max, "
        "nvlink_errors_max (new errors allowed over the window, default 0), xid_ignore (XID codes), "
        "xid_window_only (true: only an XID raised during the window fails), required (DCGM fields)",
        setting="gpu_health_thresholds",
        action="append",
        metavar="KEY=VALUE",
    ),
    Option(
        "debug",
        ("--debug",),
        "debug logging (aicr_pytest logger) and full tracebacks",
        setting="debug",
        action="store_true",
        default=False,
        env="AICR_DEBUG",
    ),
    Option(
        "log_json",
        ("--log-json",),
        "log lines as JSON objects on stderr (wins over --debug's text format)",
        setting="log_json",
        action="store_true",
        default=False,
        env="AICR_LOG_JSON",
    ),
)
