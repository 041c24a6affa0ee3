"""inference-perf guards A/B/C, knob resolution and validation, comparator checks."""

from __future__ import annotations

import pytest

from aicr_pytest import inference as inf
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.recipe import Constraint


def cs(**pairs: str) -> list[Constraint]:
    return [Constraint(name=k.replace("_", "-"), value=v) for k, v in pairs.items()]


GATES = cs(inference_throughput=">= 50000", inference_ttft_p99="<= 2000")


# --- guards --------------------------------------------------------------------------------------


def test_guard_a_exact_text() -> None:
    with pytest.raises(CheckSkip) as exc:
        inf.preflight(cs(inference_model="Qwen/Qwen3-8B"), ["dynamo-platform"])
    assert exc.value.reason == "no inference-throughput or inference-ttft-p99 constraint in recipe"


@pytest.mark.parametrize("only", ["inference_throughput", "inference_ttft_p99"])
def test_guard_a_passes_with_either_constraint(only: str) -> None:
    value = ">= 1" if only == "inference_throughput" else "<= 1"
    inf.preflight(cs(**{only: value}), ["dynamo-platform"])


@pytest.mark.parametrize("components", [None, [], ["gpu-operator"]])
def test_guard_b_exact_text(components: list[str] | None) -> None:
    with pytest.raises(CheckSkip) as exc:
        inf.preflight(GATES, components)
    assert exc.value.reason == "skipped - dynamo-platform not in recipe components"


def test_knob_errors_come_before_guard_b() -> None:
    with pytest.raises(UsageError):
        inf.preflight([*GATES, *cs(inference_routing_mode="nope")], [])


def test_guard_c() -> None:
    inf.guard_dgd_crd(True)
    expected = (
        "skipped - DynamoGraphDeployment CRD not installed on cluster "
        "(dynamo-platform component declared but operator not deployed yet)"
    )
    with pytest.raises(CheckSkip) as exc:
        inf.guard_dgd_crd(False)
    assert exc.value.reason == expected

    class NotFound(Exception):
        status = 404

    with pytest.raises(CheckSkip):
        inf.guard_dgd_crd(NotFound("not found"))


@pytest.mark.parametrize("status", [403, 500, None])
def test_guard_c_other_errors_are_inconclusive(status: int | None) -> None:
    class ApiError(Exception):
        pass

    err = ApiError("forbidden")
    err.status = status  # type: ignore[attr-defined]
    with pytest.raises(Inconclusive) as exc:
        inf.guard_dgd_crd(err)
    assert str(exc.value) == "failed to check for DynamoGraphDeployment CRD: forbidden"


# --- knobs ---------------------------------------------------------------------------------------


def test_defaults() -> None:
    k = inf.resolve_knobs(GATES)
    assert (k.model, k.concurrency_per_gpu, k.routing_mode) == ("Qwen/Qwen3-8B", 256, "dynamo-router")
    assert (k.warmup_per_concurrency, k.min_requests, k.requests_per_concurrency) == (1, 1000, 8)
    assert (k.input_tokens_mean, k.output_tokens_mean) == (128, 128)
    assert (k.workload_ready_timeout_s, k.health_timeout_s) == (600.0, 300.0)
    assert k.model_cache_size == "100Gi" and k.model_cache_storage_class is None
    assert not k.no_cleanup and k.hf_token is None
    assert (k.throughput_threshold, k.ttft_threshold) == (50000.0, 2000.0)


def test_precedence_recipe_over_catalog_over_default() -> None:
    env = {inf.ENV_MODEL: "org/env-model", inf.ENV_CONCURRENCY: "64"}
    from_env = inf.resolve_knobs(GATES, env)
    assert (from_env.model, from_env.concurrency_per_gpu) == ("org/env-model", 64)
    recipe = [*GATES, *cs(inference_model="org/recipe-model", inference_concurrency_per_gpu="32")]
    from_recipe = inf.resolve_knobs(recipe, env)
    assert (from_recipe.model, from_recipe.concurrency_per_gpu) == ("org/recipe-model", 32)
    blank = [*GATES, *cs(inference_model="  ", inference_concurrency_per_gpu="")]
    assert inf.resolve_knobs(blank, env).model == "org/env-model"
    assert inf.resolve_knobs(blank, env).concurrency_per_gpu == 64
    assert inf.resolve_knobs(GATES, {inf.ENV_MODEL: "   "}).model == "Qwen/Qwen3-8B"


def test_shell_env_is_not_a_catalog_source() -> None:
    shell = {inf.ENV_MODEL: "org/shell", inf.ENV_NO_CLEANUP: "1", inf.ENV_HF_TOKEN: "hf_secret"}
    k = inf.resolve_knobs(GATES, {}, shell)
    assert k.model == "Qwen/Qwen3-8B"  # AICR_INFERENCE_PERF_* never come from the shell
    assert k.no_cleanup and k.hf_token == "hf_secret"
    assert "hf_secret" not in repr(k)


def test_catalog_cannot_set_shell_only_knobs() -> None:
    k = inf.resolve_knobs(GATES, {inf.ENV_NO_CLEANUP: "1", inf.ENV_HF_TOKEN: "x"}, {})
    assert not k.no_cleanup and k.hf_token is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("t", True),
        ("TRUE", True),
        ("True", True),
        ("yes", False),
        ("0", False),
        ("", False),
        ("on", False),
    ],
)
def test_no_cleanup_parse_bool(raw: str, expected: bool) -> None:
    assert inf.resolve_knobs(GATES, {}, {inf.ENV_NO_CLEANUP: raw}).no_cleanup is expected


def test_routing_mode() -> None:
    assert (
        inf.resolve_knobs([*GATES, *cs(inference_routing_mode=" gateway-epp ")]).routing_mode == "gateway-epp"
    )
    assert inf.resolve_knobs([*GATES, *cs(inference_routing_mode="")]).routing_mode == "dynamo-router"


@pytest.mark.parametrize(
    ("constraints", "env", "message"),
    [
        (
            cs(inference_model="bad model"),
            {},
            'invalid inference model "bad model": must be a Hugging Face model ID '
            "(characters [A-Za-z0-9._/-])",
        ),
        (
            {},
            {inf.ENV_MODEL: "-leading-dash"},
            'invalid inference model "-leading-dash": must be a Hugging Face '
            "model ID (characters [A-Za-z0-9._/-])",
        ),
        (cs(inference_model="org/m\nx"), {}, None),
        (
            cs(inference_concurrency_per_gpu="0"),
            {},
            'invalid inference-concurrency-per-gpu="0": must be a positive integer',
        ),
        (
            cs(inference_concurrency_per_gpu="abc"),
            {},
            'invalid inference-concurrency-per-gpu="abc": must be a positive integer',
        ),
        (
            cs(inference_routing_mode="round-robin"),
            {},
            'invalid inference-routing-mode="round-robin": must be "dynamo-router" or "gateway-epp"',
        ),
    ],
)
def test_recipe_knob_errors(
    constraints: list[Constraint] | dict[str, str], env: dict[str, str], message: str | None
) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs([*GATES, *constraints], env)
    if message is not None:
        assert str(exc.value) == message
    assert exc.value.exit_code == 2


INT_KNOBS = [
    inf.ENV_CONCURRENCY,
    inf.ENV_WARMUP,
    inf.ENV_MIN_REQUESTS,
    inf.ENV_REQUESTS_PER_CONCURRENCY,
    inf.ENV_INPUT_TOKENS,
    inf.ENV_OUTPUT_TOKENS,
]


@pytest.mark.parametrize("name", INT_KNOBS)
@pytest.mark.parametrize("raw", ["0", "-3", " 256", "256 ", "1.5", "abc", "1_000", "99999999999999999999"])
def test_int_knob_errors(name: str, raw: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(GATES, {name: raw})
    assert str(exc.value) == f'invalid {name}="{raw}": must be a positive integer'


@pytest.mark.parametrize("name", INT_KNOBS)
def test_int_knob_values(name: str) -> None:
    k = inf.resolve_knobs(GATES, {name: "+7"})
    values = {
        inf.ENV_CONCURRENCY: k.concurrency_per_gpu,
        inf.ENV_WARMUP: k.warmup_per_concurrency,
        inf.ENV_MIN_REQUESTS: k.min_requests,
        inf.ENV_REQUESTS_PER_CONCURRENCY: k.requests_per_concurrency,
        inf.ENV_INPUT_TOKENS: k.input_tokens_mean,
        inf.ENV_OUTPUT_TOKENS: k.output_tokens_mean,
    }
    assert values[name] == 7


@pytest.mark.parametrize("name", [inf.ENV_WORKLOAD_READY_TIMEOUT, inf.ENV_HEALTH_TIMEOUT])
@pytest.mark.parametrize("raw", ["0", "0s", "-5m", "30", "abc", "5 m", "m", ".s", "1d"])
def test_duration_knob_errors(name: str, raw: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(GATES, {name: raw})
    assert str(exc.value) == f'invalid {name}="{raw}": must be a positive Go duration (e.g. 30m)'


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("30m", 1800), ("1h30m", 5400), ("1.5h", 5400), ("90s", 90), ("500ms", 0.5), ("2m0s", 120), ("+1m", 60)],
)
def test_duration_knob_values(raw: str, seconds: float) -> None:
    assert inf.resolve_knobs(GATES, {inf.ENV_WORKLOAD_READY_TIMEOUT: raw}).workload_ready_timeout_s == seconds


@pytest.mark.parametrize("raw", ["off", "OFF", " none ", "0", "Disabled"])
def test_cache_disable_sentinels(raw: str) -> None:
    k = inf.resolve_knobs(GATES, {inf.ENV_CACHE_SIZE: raw})
    assert k.model_cache_size is None and not k.model_cache_enabled


def test_cache_size_values_and_errors() -> None:
    assert inf.resolve_knobs(GATES, {inf.ENV_CACHE_SIZE: " 50Gi "}).model_cache_size == "50Gi"
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(GATES, {inf.ENV_CACHE_SIZE: "lots"})
    assert str(exc.value) == (
        'invalid AICR_INFERENCE_PERF_MODEL_CACHE_SIZE="lots": must be a Kubernetes quantity (e.g. 100Gi) '
        "or a disable sentinel (off/0/none/disabled)"
    )
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(GATES, {inf.ENV_CACHE_SIZE: "-1Gi"})
    assert (
        str(exc.value) == 'invalid AICR_INFERENCE_PERF_MODEL_CACHE_SIZE="-1Gi": cache size must be positive'
    )


def test_storage_class_knob_trimmed() -> None:
    assert inf.resolve_knobs(GATES, {inf.ENV_CACHE_STORAGE_CLASS: " gp3 "}).model_cache_storage_class == "gp3"
    assert inf.resolve_knobs(GATES, {inf.ENV_CACHE_STORAGE_CLASS: "  "}).model_cache_storage_class is None


def test_cache_storage_class_precedence_recipe_over_catalog_over_default() -> None:
    # upstream's documented precedence: recipe constraint > catalog env > the cluster's default
    recipe = [*GATES, *cs(inference_model_cache_storage_class=" a4x-compatible ")]
    env = {inf.ENV_CACHE_STORAGE_CLASS: "gp3"}
    assert inf.resolve_knobs(recipe, env).model_cache_storage_class == "a4x-compatible"
    assert inf.resolve_knobs(recipe, {}).model_cache_storage_class == "a4x-compatible"
    assert inf.resolve_knobs(GATES, env).model_cache_storage_class == "gp3"
    assert inf.resolve_knobs(GATES, {}).model_cache_storage_class is None  # missing: the cluster default
    blank = [*GATES, *cs(inference_model_cache_storage_class="  ")]
    assert inf.resolve_knobs(blank, env).model_cache_storage_class == "gp3"  # blank means unset


@pytest.mark.parametrize(
    ("source", "raw"),
    [
        ("constraint", "Hyperdisk_Balanced"),
        ("constraint", "-gp3"),
        ("constraint", "a" * 254),
        ("env", "gp3 fast"),
    ],
)
def test_cache_storage_class_that_names_no_storage_class_is_a_usage_error(source: str, raw: str) -> None:
    if source == "constraint":
        items, env, name = (
            [*GATES, *cs(inference_model_cache_storage_class=raw)],
            {},
            "inference-model-cache-storage-class",
        )
    else:
        items, env, name = (
            GATES,
            {inf.ENV_CACHE_STORAGE_CLASS: raw},
            "AICR_INFERENCE_PERF_MODEL_CACHE_STORAGE_CLASS",
        )
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(items, env)
    assert str(exc.value) == (
        f'invalid {name}="{raw}": must be a StorageClass name (lowercase letters, digits, "-" and ".", '
        "at most 253 characters, starting and ending with a letter or digit)"
    )


def test_router_mode_knob() -> None:
    assert inf.resolve_knobs(GATES, {}).router_mode == "least-loaded"
    for mode in ("kv", "round-robin", "random", "power-of-two", "least-loaded", "device-aware-weighted"):
        assert inf.resolve_knobs(GATES, {inf.ENV_ROUTER_MODE: f" {mode} "}).router_mode == mode
    assert inf.resolve_knobs(GATES, {inf.ENV_ROUTER_MODE: "  "}).router_mode == "least-loaded"
    # only the catalog env sets it, as upstream: the shell running aicr-pytest does not
    assert inf.resolve_knobs(GATES, {}, {inf.ENV_ROUTER_MODE: "kv"}).router_mode == "least-loaded"


@pytest.mark.parametrize("raw", ["direct", "KV", "least_loaded", "round robin"])
@pytest.mark.parametrize("routing", ["dynamo-router", "gateway-epp"])
def test_router_mode_errors_list_the_valid_values_in_either_routing_mode(raw: str, routing: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs([*GATES, *cs(inference_routing_mode=routing)], {inf.ENV_ROUTER_MODE: raw})
    assert str(exc.value) == (
        f'invalid AICR_INFERENCE_PERF_ROUTER_MODE "{raw}": must be one of kv, round-robin, random, '
        "power-of-two, least-loaded, device-aware-weighted"
    )


# --- comparators ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "threshold"),
    [(">= 50000", 50000), (">=50000", 50000), ("  >= 1.5e4 tok/s", 15000), (">=   7", 7)],
)
def test_throughput_comparator_ok(value: str, threshold: float) -> None:
    assert inf.resolve_knobs(cs(inference_throughput=value)).throughput_threshold == threshold


@pytest.mark.parametrize("value", ["> 50000", "50000", "<= 50000", "== 50000", "=> 50000", "≥ 50000"])
def test_throughput_comparator_wrong_direction(value: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(cs(inference_throughput=value))
    assert str(exc.value).startswith(
        f'inference-throughput constraint must start with ">=" (got "{value}"); '
    )


@pytest.mark.parametrize("value", [">=> 5", ">= =5", ">==5", ">=!5", ">= <5"])
def test_throughput_comparator_extra_operator(value: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(cs(inference_throughput=value))
    assert str(exc.value).startswith(
        f'inference-throughput constraint must start with exactly ">=" (got "{value}"); '
    )


@pytest.mark.parametrize("value", [">= 2000", ">=2000", "2000", "< 2000", "<< 2000"])
def test_ttft_comparator_errors(value: str) -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(cs(inference_ttft_p99=value))
    assert str(exc.value).startswith("inference-ttft-p99 constraint must start with")


def test_threshold_errors() -> None:
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(cs(inference_throughput=">= "))
    assert str(exc.value) == 'invalid threshold: no numeric value found in ">= "'
    with pytest.raises(UsageError) as exc:
        inf.resolve_knobs(cs(inference_ttft_p99="<= fast"))
    assert str(exc.value).startswith("invalid threshold format")
    for bad in ("<= nan", "<= inf", "<= 1_000"):
        with pytest.raises(UsageError):
            inf.resolve_knobs(cs(inference_ttft_p99=bad))


def test_first_constraint_wins() -> None:
    k = inf.resolve_knobs([*cs(inference_throughput=">= 10"), *cs(inference_throughput="bogus")])
    assert k.throughput_threshold == 10
