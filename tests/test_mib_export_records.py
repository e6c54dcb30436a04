"""A fresh clone's ``render`` keeps the committed MIB exports (issue 59: rebuilding them, mostly xz
compression, was most of its time): each export has a committed record of the result bytes it was
made from, and is rebuilt exactly when the result, the export or the layout changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from circuit_gym.leaderboard import edge_tables as E

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = sorted((ROOT / "leaderboard" / "results").rglob("*.mib.tar.xz"))


def _result_of(export: Path) -> Path:
    return export.with_name(export.name.removesuffix(".mib.tar.xz") + ".json")


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_committed_export_is_current_for_its_result(export):
    assert E.mib_export_is_current(_result_of(export))


def test_a_changed_result_export_or_layout_is_rebuilt(tmp_path, monkeypatch):
    export = EXPORTS[0]
    result = tmp_path / _result_of(export).name
    shutil.copy(_result_of(export), result)
    shutil.copy(export, E.mib_path(result))
    assert not E.mib_export_is_current(result)  # no record: made again
    shutil.copy(E.mib_source_path(_result_of(export)), E.mib_source_path(result))
    assert E.mib_export_is_current(result)
    E.mib_path(result).write_bytes(E.mib_path(result).read_bytes() + b"\0")  # an edited export
    assert not E.mib_export_is_current(result)
    E.write_mib_export(result)
    assert E.mib_export_is_current(result) and E.mib_path(result).read_bytes() == export.read_bytes()
    result.write_text(result.read_text() + " ")  # other result bytes
    assert not E.mib_export_is_current(result)
    E.write_mib_export(result)
    monkeypatch.setattr(E, "MIB_EXPORT_FORMAT", E.MIB_EXPORT_FORMAT + 1)  # a new layout
    assert not E.mib_export_is_current(result)


def test_a_record_is_not_read_as_a_result_file():
    assert not E.mib_source_path(_result_of(EXPORTS[0])).name.endswith(".json")
