"""The deployment files in deploy/ agree with the docs and with the package."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

from soev_pipeline.project.listing import read_projects

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"


def test_the_docs_show_the_dagster_yaml_that_the_postgres_tests_use() -> None:
    config = (DEPLOY / "dagster.yaml").read_text(encoding="utf-8")
    assert f"```yaml\n{config}```" in (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    storage = yaml.safe_load(config)["storage"]["postgres"]["postgres_db"]
    assert all(isinstance(value, dict) and "env" in value for value in storage.values())


def test_the_image_serves_the_location_module_with_the_listed_projects() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    (module, attribute) = re.findall(
        r'"--module-name", "([\w.]+)", "--attribute", "(\w+)"', dockerfile
    )[0]
    assert importlib.util.find_spec(module) is not None
    assert "dagster-k8s==0.29.27" in dockerfile
    for source in re.findall(r"^COPY (\S+)", dockerfile, flags=re.MULTILINE):
        assert (REPO / source).exists(), source
    (listed,) = read_projects(DEPLOY / "projects.yaml")
    assert listed.name == attribute == "demo"  # a location serves the project it names
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text(encoding="utf-8"))
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["--module-name", module, "--attribute", attribute]
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    queue = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert queue["tagConcurrencyLimits"][0]["key"] == "soev/system"


def test_the_image_runs_as_a_numeric_user_that_is_not_root() -> None:
    """A cluster with `runAsNonRoot` can verify only a numeric user (`USER 10001:10001`)."""
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    *_, user = re.findall(r"^USER\s+(\S+)\s*$", dockerfile, flags=re.MULTILINE)
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0, user
    assert f"--uid {uid} --gid {gid}" in dockerfile and f"--gid {gid} soev" in dockerfile
