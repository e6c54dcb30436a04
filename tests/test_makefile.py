"""The install commands: which torch build `make install` asks pip for, which Python it uses,
and what CI runs. CI cannot reach PyTorch's index, so these check the commands make would run
(`make -n`), the way a user's machine would get them."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
CPU_INDEX = (
    "https://download.pytorch.org/whl/cpu"  # PyTorch's own CPU wheel index (pytorch.org, "Get started")
)
pytestmark = pytest.mark.skipif(MAKE is None, reason="needs GNU make")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_INDEX_URL", "PYTHON", "VENV", "MAKEFLAGS")}
    env.update(extra)
    return env


def _dry_run(*args: str, env: dict[str, str] | None = None, target: str = "install") -> list[str]:
    """The commands `make -n -B <target>` would run, one per line (nothing is run)."""
    done = subprocess.run([MAKE, "-n", "-B", target, *args], cwd=ROOT, env=env or _env(),
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.splitlines()


def _torch_line(lines: list[str]) -> str:
    (line,) = [line for line in lines if re.search(r"pip install .*torch==", line)]
    return line


def test_default_install_asks_pytorchs_cpu_index_for_torch(tmp_path):
    line = _torch_line(_dry_run(f"VENV={tmp_path}/venv"))
    assert line == f"{tmp_path}/venv/bin/python -m pip install --quiet torch==2.13.0 --index-url {CPU_INDEX}"


def test_torch_comes_before_the_package(tmp_path):
    lines = _dry_run(f"VENV={tmp_path}/venv")
    package = next(i for i, line in enumerate(lines) if '-e ".[dev]"' in line)
    assert lines.index(_torch_line(lines)) < package  # else pip resolves torch from PyPI (CUDA on Linux)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_empty_torch_index_uses_the_configured_indexes(tmp_path, how):
    args, env = (["TORCH_INDEX_URL="], _env()) if how == "argument" else ([], _env(TORCH_INDEX_URL=""))
    line = _torch_line(_dry_run(f"VENV={tmp_path}/venv", *args, env=env))
    assert line.endswith("pip install --quiet torch==2.13.0") and "--index-url" not in line


def test_another_index_for_a_cuda_build(tmp_path):
    url = "https://download.pytorch.org/whl/cu126"
    assert _torch_line(_dry_run(f"VENV={tmp_path}/venv", f"TORCH_INDEX_URL={url}")).endswith(
        f"--index-url {url}"
    )


def test_ci_installs_torch_from_the_configured_indexes(tmp_path):
    """.ci/run (dry: MAKEFLAGS=n) must not send pip to download.pytorch.org, which CI cannot reach."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for tool in ("chromium", "chromedriver"):  # so .ci/run skips its apt-get step
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    env = _env(MAKEFLAGS="n", VENV=str(tmp_path / "venv"), PATH=f"{stubs}:{os.environ['PATH']}")
    done = subprocess.run(["bash", ".ci/run"], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert _torch_line(lines).endswith("pip install --quiet torch==2.13.0")
    assert any('-m pytest -q -m "not slow" --durations=30' in line for line in lines)  # and it runs the suite
    assert any("-m pytest -q -m slow --durations=30" in line for line in lines)  # and then the slow tests


def test_make_test_lists_the_30_slowest_tests(tmp_path):
    """`make test`'s suite run ends with pytest's table of the 30 slowest tests (issue 56); the
    numerics rerun does not repeat it. By default the suite runs in two pytest-xdist workers, a test
    file each, torch on one thread per worker; JOBS=1 runs it serially, with nothing added."""
    lines = [line for line in _dry_run(f"VENV={tmp_path}/venv", target="test") if " -m pytest " in line]
    assert len(lines) == 2, lines
    suite, numerics = lines
    assert shlex.split(suite) == [
        "OMP_NUM_THREADS=1",
        "MKL_NUM_THREADS=1",
        f"{tmp_path}/venv/bin/python",
        "-m",
        "pytest",
        "-q",
        "-m",
        "not slow",
        "--durations=30",
        "-n",
        "2",
        "--dist",
        "loadfile",
    ]
    assert "--durations" not in numerics and numerics.endswith("-m pytest -q -m numerics")
    assert "-n" not in shlex.split(numerics)  # the numerics rerun stays serial, one thread
    serial = [
        line for line in _dry_run(f"VENV={tmp_path}/venv", "JOBS=1", target="test") if " -m pytest " in line
    ]
    assert shlex.split(serial[0]) == [f"{tmp_path}/venv/bin/python", "-m", "pytest", "-q", "-m", "not slow",
                                      "--durations=30"]  # fmt: skip


def test_readme_shows_the_command_make_runs(tmp_path):
    """README's plain-pip instructions are the Makefile's torch command, index included."""
    line = _torch_line(_dry_run(f"VENV={tmp_path}/venv"))
    command = line[line.index("pip install") :].replace("--quiet ", "")
    assert command in (ROOT / "README.md").read_text()


def test_python_minimum_is_the_packages():
    makefile = (ROOT / "Makefile").read_text()
    (minimum,) = re.findall(r"^PYTHON_MIN := (\S+)$", makefile, re.M)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={minimum}"


def _fake_pythons(tmp_path: Path, old: tuple[str, ...], new: tuple[str, ...]) -> Path:
    folder = tmp_path / "pythons"
    folder.mkdir()
    for name in old:  # a Python below the minimum: its version check exits 1
        (folder / name).write_text("#!/bin/sh\nexit 1\n")
        (folder / name).chmod(0o755)
    for name in new:
        (folder / name).symlink_to(sys.executable)
    return folder


def test_finds_a_recent_enough_python_by_any_name(tmp_path):
    folder = _fake_pythons(tmp_path, old=("python3",), new=("python3.12",))
    lines = _dry_run(f"VENV={tmp_path}/venv", env=_env(PATH=f"{folder}:/usr/bin:/bin"))
    assert f"test -x {tmp_path}/venv/bin/python || python3.12 -m venv {tmp_path}/venv" in lines


def _minimum() -> str:
    (minimum,) = re.findall(r"^PYTHON_MIN := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    return minimum


def test_python_minimum_is_what_tianshou_requires():
    """The Makefile's reason for not supporting 3.10 holds: the installed Tianshou (a 2.x release,
    as pyproject pins) requires the minimum. (The package's own code needs only 3.10: vermin.)"""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(re.fullmatch(r"tianshou>=2\.\d+,<3", r.replace(" ", "")) for r in requires)
    tianshou = importlib.metadata.metadata("tianshou")
    assert tianshou["Version"].startswith("2.")
    (lower,) = re.findall(r">=\s*(\d+\.\d+)", tianshou["Requires-Python"])
    assert _version(_minimum()) >= _version(lower), f"tianshou {tianshou['Version']} needs Python >= {lower}"
    assert "PYTHON_WHY := Tianshou 2.x" in (ROOT / "Makefile").read_text()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _make_install(tmp_path: Path, path: str, *args: str) -> str:
    """`make install`'s output where PATH is ``path`` (it must fail before creating the venv)."""
    done = subprocess.run([MAKE, "install", f"VENV={tmp_path}/venv", *args], cwd=ROOT, env=_env(PATH=path),
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode != 0
    assert not (tmp_path / "venv").exists()  # stopped before creating anything
    return done.stdout + done.stderr


def test_without_a_recent_enough_python_says_what_to_set(tmp_path):
    folder = _fake_pythons(tmp_path, old=("python3", "python"), new=())
    message = _make_install(tmp_path, str(folder))  # this folder only: no system Python
    assert f"found no Python >= {_minimum()} on PATH" in message
    assert "Tianshou 2.x" in message  # why, not only what
    assert "make install PYTHON=/path/to/python3.X" in message


def test_a_too_old_python_given_by_name_is_refused_by_name(tmp_path):
    folder = _fake_pythons(tmp_path, old=("python3.10",), new=("python3",))
    message = _make_install(tmp_path, f"{folder}:/usr/bin:/bin", "PYTHON=python3.10")  # a newer one is there
    assert f"PYTHON=python3.10 is not a Python >= {_minimum()}" in message
    assert "make install PYTHON=" in message


def test_a_python_given_by_name_is_used(tmp_path):
    folder = _fake_pythons(tmp_path, old=("python3",), new=("python3.13",))
    lines = _dry_run(f"VENV={tmp_path}/venv", "PYTHON=python3.13", env=_env(PATH=f"{folder}:/usr/bin:/bin"))
    assert f"test -x {tmp_path}/venv/bin/python || python3.13 -m venv {tmp_path}/venv" in lines
