"""The hook's stdlib path resolver agrees with platformdirs (which the hook cannot import)."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from memcue.core.paths import MAX_SOCKET_PATH_BYTES, Locations, data_dir


def test_default_data_dir_matches_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMCUE_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert data_dir() == Path(platformdirs.user_data_dir("memcue"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == Path(platformdirs.user_data_dir("memcue")) == tmp_path / "xdg" / "memcue"


def test_memcue_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMCUE_HOME", str(tmp_path / "home"))
    assert data_dir() == tmp_path / "home"


def test_deep_data_dir_gets_a_short_socket_path(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 120)
    sock = Locations(deep).socket
    assert len(str(sock).encode()) <= MAX_SOCKET_PATH_BYTES
    assert sock == Locations(deep).socket  # stable: every process finds the same socket
    assert Locations(Path("/tmp/short")).socket == Path("/tmp/short/sidecar.sock")
