"""The project's Dagster instance: made once, under a lock, by whichever process comes first."""

from pathlib import Path

from soev_pipeline.orchestration.instance import STORAGE_READY, ensure_instance


def test_the_storage_is_made_once_and_marked(tmp_path: Path) -> None:
    home = ensure_instance(tmp_path / "dagster")
    assert (home / STORAGE_READY).exists() and (home / "dagster.yaml").exists()
    config = (home / "dagster.yaml").read_text(encoding="utf-8")
    assert ensure_instance(home) == home
    assert (home / "dagster.yaml").read_text(encoding="utf-8") == config


def test_a_dagster_yaml_of_the_user_is_kept(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    ensure_instance(home)
    assert (home / "dagster.yaml").read_text(encoding="utf-8") == "telemetry:\n  enabled: false\n"
