"""``deploy/k8s``: Helm values for Dagster's chart (1.13.27) and the image they name.

Neither a Helm binary nor Dagster's chart repository is reachable from this environment, so
``helm template`` cannot run here. What is checked instead, with the real code where there is
some: every value block these values set uses only the chart's value names for that block (the
chart's ``values.schema.json`` refuses unknown keys there) and has its required ones; the
instance ``dagster.yaml`` the chart's ``configmap-instance.yaml`` renders from them is built the
way that template builds it, equals the embedded default's lanes, pools, run monitoring and run
retries, and passes Dagster's own instance schema and the configured classes' own config
schemas (the project's run coordinator, dagster-k8s's ``K8sRunLauncher``, dagster-postgres's
storages)."""

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config_schema
from dagster_k8s import K8sRunLauncher
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

from replay_assets.defs.lanes import LaneRunCoordinator
from replay_assets.entrypoints.runner import PROJECT_INSTANCE_CONFIG

PROJECT = Path(__file__).resolve().parents[1]
VALUES = yaml.safe_load((PROJECT / "deploy" / "k8s" / "values.yaml").read_text(encoding="utf-8"))
PULL = {"Always", "IfNotPresent", "Never"}

K8S_LAUNCHER_REQUIRED = {
    "imagePullPolicy",
    "loadInclusterConfig",
    "envConfigMaps",
    "envSecrets",
    "envVars",
    "volumeMounts",
    "volumes",
}
# The chart's value names for each block the values set (all refuse other keys), and the
# required ones, as its 1.13 schema states them.
CHART_BLOCKS: dict[tuple[str, ...], tuple[set[str], set[str]]] = {
    ("runLauncher",): ({"type", "config"}, set()),
    ("runLauncher", "config", "k8sRunLauncher"): (
        K8S_LAUNCHER_REQUIRED
        | {
            "image",
            "jobNamespace",
            "kubeconfigFile",
            "labels",
            "failPodOnRunFailure",
            "resources",
            "schedulerName",
            "securityContext",
            "runK8sConfig",
        },
        K8S_LAUNCHER_REQUIRED,
    ),
    ("dagsterDaemon", "runCoordinator"): ({"enabled", "type", "config"}, {"enabled"}),
    ("dagsterDaemon", "runCoordinator", "config", "customRunCoordinator"): (
        {"module", "class", "config"},
        {"module", "class", "config"},
    ),
    ("dagsterDaemon", "runRetries"): ({"enabled", "maxRetries", "retryOnAssetOrOpFailure"}, {"enabled"}),
    ("concurrency",): ({"enabled", "pools", "runs"}, set()),
    ("concurrency", "pools"): ({"defaultLimit", "granularity", "opGranularityRunBuffer"}, set()),
    ("concurrency", "runs"): ({"maxConcurrentRuns", "tagConcurrencyLimits"}, set()),
}
DEPLOYMENT_REQUIRED = {"name", "image", "port"}
# run_monitoring keys the chart always writes, at values that mean what their absence means
# (Dagster polls every 120 s by default; 0 leaves the slot-freeing loop off, as unset does)
CHART_MONITORING_EXTRAS = {"poll_interval_seconds": 120, "free_slots_after_run_end_seconds": 0}


def _at(path: tuple[str, ...]) -> Any:
    node: Any = VALUES
    for key in path:
        node = node[key]
    return node


@pytest.mark.parametrize("path", list(CHART_BLOCKS), ids=".".join)
def test_each_block_uses_the_charts_value_names(path: tuple[str, ...]) -> None:
    allowed, required = CHART_BLOCKS[path]
    block = _at(path)
    assert set(block) <= allowed, f"unknown to the chart: {sorted(set(block) - allowed)}"
    assert required <= set(block), f"missing: {sorted(required - set(block))}"


def test_enumerated_values_and_the_code_location() -> None:
    assert VALUES["runLauncher"]["type"] == "K8sRunLauncher"
    assert VALUES["dagsterDaemon"]["runCoordinator"]["type"] == "CustomRunCoordinator"
    assert VALUES["runLauncher"]["config"]["k8sRunLauncher"]["imagePullPolicy"] in PULL
    images = [VALUES[c]["image"] for c in ("dagsterWebserver", "dagsterDaemon")]
    [deployment] = VALUES["dagster-user-deployments"]["deployments"]
    assert DEPLOYMENT_REQUIRED <= set(deployment) and deployment["image"]["pullPolicy"] in PULL
    # the webserver and daemon import the run coordinator: they run the code location's image
    assert all(image == deployment["image"] for image in images)
    pyproject = (PROJECT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'module_name = "{deployment["dagsterApiGrpcArgs"][1]}"' in pyproject
    assert "--extra k8s" in (PROJECT / "deploy" / "k8s" / "Dockerfile").read_text(encoding="utf-8")
    assert VALUES["postgresql"]["enabled"] is False and VALUES["postgresql"]["postgresqlHost"]


def rendered_instance(values: dict[str, Any]) -> dict[str, Any]:
    """The instance ``dagster.yaml`` the chart renders from ``values`` (the parts they set),
    key by key as its ``configmap-instance.yaml`` writes them."""
    daemon, launcher = values["dagsterDaemon"], values["runLauncher"]["config"]["k8sRunLauncher"]
    custom = daemon["runCoordinator"]["config"]["customRunCoordinator"]
    pg = values["postgresql"]
    postgres_db = {
        "postgres_db": {
            "username": pg["postgresqlUsername"],
            "password": {"env": "DAGSTER_PG_PASSWORD"},
            "hostname": pg["postgresqlHost"],
            "db_name": pg["postgresqlDatabase"],
            "port": pg["service"]["port"],
            "params": pg["postgresqlParams"],
        }
    }
    monitoring = daemon["runMonitoring"]
    retries = daemon["runRetries"]
    concurrency = values["concurrency"]
    return {
        "run_storage": {
            "module": "dagster_postgres.run_storage",
            "class": "PostgresRunStorage",
            "config": postgres_db,
        },
        "event_log_storage": {
            "module": "dagster_postgres.event_log",
            "class": "PostgresEventLogStorage",
            "config": postgres_db,
        },
        "schedule_storage": {
            "module": "dagster_postgres.schedule_storage",
            "class": "PostgresScheduleStorage",
            "config": postgres_db,
        },
        "run_coordinator": {"module": custom["module"], "class": custom["class"], "config": custom["config"]},
        "run_launcher": {
            "module": "dagster_k8s",
            "class": "K8sRunLauncher",
            "config": {
                "load_incluster_config": launcher["loadInclusterConfig"],
                "job_namespace": "replay-assets",  # the release namespace
                "image_pull_policy": launcher["imagePullPolicy"],
                "service_account_name": "replay-assets-dagster",
                "dagster_home": "/opt/dagster/dagster_home",
                "instance_config_map": "replay-assets-dagster-instance",
                "postgres_password_secret": "dagster-postgresql-secret",
                "env_secrets": [s["name"] for s in launcher["envSecrets"]],
                "env_vars": launcher["envVars"],
                "volume_mounts": launcher["volumeMounts"],
                "volumes": launcher["volumes"],
                "labels": launcher["labels"],
                "resources": launcher["resources"],
                "fail_pod_on_run_failure": launcher["failPodOnRunFailure"],
            },
        },
        "concurrency": {
            "pools": {
                "default_limit": concurrency["pools"]["defaultLimit"],
                "granularity": concurrency["pools"]["granularity"],
            },
            "runs": {"tag_concurrency_limits": concurrency["runs"]["tagConcurrencyLimits"]},
        },
        "run_monitoring": {
            "enabled": monitoring["enabled"],
            "start_timeout_seconds": monitoring["startTimeoutSeconds"],
            "poll_interval_seconds": monitoring["pollIntervalSeconds"],
            "max_resume_run_attempts": monitoring["maxResumeRunAttempts"],
            "free_slots_after_run_end_seconds": monitoring["freeSlotsAfterRunEndSeconds"],
        },
        "run_retries": {
            "enabled": retries["enabled"],
            "max_retries": retries["maxRetries"],
            "retry_on_asset_or_op_failure": retries["retryOnAssetOrOpFailure"],
        },
        "telemetry": {"enabled": values["telemetry"]["enabled"]},
    }


def test_the_cluster_instance_keeps_the_embedded_defaults_lanes_limits_and_retries() -> None:
    embedded = yaml.safe_load(PROJECT_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    cluster = rendered_instance(VALUES)
    for section in ("run_coordinator", "concurrency", "run_retries", "telemetry"):
        assert cluster[section] == embedded[section], section
    monitoring = dict(cluster["run_monitoring"])
    for key, default in CHART_MONITORING_EXTRAS.items():
        assert monitoring.pop(key) == default
    assert monitoring == embedded["run_monitoring"]


def test_the_cluster_instance_passes_dagsters_own_config_schemas() -> None:
    cluster = rendered_instance(VALUES)
    checked = validate_config(dagster_instance_config_schema(), cluster)
    assert checked.success, [e.message for e in checked.errors or []]
    classes: dict[str, type[dg.ConfigurableClass]] = {
        "run_coordinator": LaneRunCoordinator,
        "run_launcher": K8sRunLauncher,
        "run_storage": PostgresRunStorage,
        "event_log_storage": PostgresEventLogStorage,
        "schedule_storage": PostgresScheduleStorage,
    }
    for section, cls in classes.items():
        result = validate_config(cls.config_type(), cluster[section]["config"])
        assert result.success, (section, [e.message for e in result.errors or []])
    wrong = {**cluster["run_launcher"]["config"], "image_pull_policy_typo": "Always"}
    assert not validate_config(K8sRunLauncher.config_type(), wrong).success  # the check can fail
