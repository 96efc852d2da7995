"""The engine's workers read the landing area at a URI (``spark_landing_uri``) instead of the
home's landing folder: what lands is what the URI holds, checked against the manifest this
process scans locally (the same tree, e.g. a bucket mounted in the home). A ``file://`` URI to
a copy of the landing folder stands in for an object store: the same Arrow file-system path."""

import shutil
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.config import settings_from
from replay_assets.storage.landing import area
from replay_assets.storage.spark.store import SparkStore
from replay_assets.storage.spark.tables import EngineLanding
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.sail_server import session
from replay_assets_tests.storage.test_landing_contract import CTX, LINES, NOW, TABLES, _deliver
from replay_assets_tests.stores import store_rows


def _land(store: SparkStore, seen: area.Seen) -> Any:
    assert seen.manifest is not None
    files = area.delivery_files(seen.path.parent, seen.manifest)
    with store.transaction() as unit:
        return unit.landing.land_batch(seen.manifest, files=files, ctx=CTX, now=NOW)


def _store(sail: str, tmp_path: Path, name: str, landing: EngineLanding | None) -> SparkStore:
    return SparkStore(session(sail), str(tmp_path / name), landing=landing)


def _rows(store: SparkStore) -> dict[str, list[dict[str, object]]]:
    return {t: sorted(store_rows(store, t), key=repr) for t in TABLES}


def _bucket(tmp_path: Path) -> tuple[Path, Path, area.Seen]:
    local = tmp_path / "landing"
    seen = _deliver(local, "B1", LINES)
    bucket = tmp_path / "bucket"
    shutil.copytree(local, bucket)
    return local, bucket, seen


def test_the_engine_lands_what_the_uri_holds_as_it_lands_the_local_folder(sail: str, tmp_path: Path) -> None:
    local, bucket, seen = _bucket(tmp_path)
    at_uri = _store(sail, tmp_path, "uri", EngineLanding(local, bucket.as_uri()))
    at_path = _store(sail, tmp_path, "path", None)
    assert _land(at_uri, seen).source_events == _land(at_path, seen).source_events == 18
    assert _rows(at_uri) == _rows(at_path)


@pytest.mark.parametrize("change", ["edit", "remove"])
def test_a_file_the_uri_holds_otherwise_or_not_at_all_lands_nothing(
    sail: str, tmp_path: Path, change: str
) -> None:
    local, bucket, seen = _bucket(tmp_path)
    assert seen.manifest is not None
    name = seen.manifest.files[0].path
    copy = bucket / seen.path.parent.relative_to(local) / name
    if change == "edit":  # the local file is intact: only the engine's read can see this
        copy.write_text(copy.read_text().replace('"quantity":1', '"quantity":2'))
    else:
        copy.unlink()
    store = _store(sail, tmp_path, "uri", EngineLanding(local, bucket.as_uri()))
    with pytest.raises(area.DeliveryMismatch, match=name) as refused:
        _land(store, seen)
    assert str(bucket) not in str(refused.value)
    assert all(rows == [] for rows in _rows(store).values())


def test_the_setting_reaches_the_pipelines_store(sail: str, tmp_path: Path) -> None:
    env = {
        "REPLAY_ASSETS_WAREHOUSE": "spark",
        "REPLAY_ASSETS_SPARK_REMOTE": sail,
        "REPLAY_ASSETS_SPARK_LANDING_URI": "s3://bucket/landing/",
    }
    settings = settings_from(env, str(tmp_path / "home"), None)
    store = Pipeline(settings).store
    assert isinstance(store, SparkStore)
    assert store.tables.landed_file(settings.landing / "erp" / "f.jsonl") == "s3://bucket/landing/erp/f.jsonl"
