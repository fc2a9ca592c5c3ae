"""Who runs a twin's design: never root.

A twin started as root (its network namespace and TAP devices need it) keeps for itself
only what needs the privilege: the namespace, the TAP devices, the descriptors and files
it hands the design. Verilator's compile of a design (its HDL may come from an uploaded
``.fpg``) and the harness process that runs it are started as an unprivileged user
(``nobody`` unless told otherwise), without supplementary groups and with a minimal
environment, so an ``include`` of a file only root may read, a ``$system`` call or a
``$readmemh`` of one gets what that user would get. Started by another user, the twin
runs everything as that user: there is nothing to drop.

What that user can reach is decided by :meth:`RunAs.cannot_reach`, from the permission
bits of every folder the kernel walks to a path (``os.access`` answers for this process,
not for the user its children become).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_USER = "nobody"
# As the kernel's: a path whose resolution follows more links than this fails (ELOOP).
MAX_LINKS = 40
READ, WRITE, EXECUTE = 4, 2, 1


class PrivilegeError(RuntimeError):
    """The user to run designs as cannot be used (the user and the reason named)."""


@dataclass(frozen=True)
class RunAs:
    """The unprivileged identity a twin's compile and harness run as."""

    user: str
    uid: int
    gid: int

    @property
    def switches(self) -> bool:
        """True when this process is root and the children change to ``uid``."""
        return os.geteuid() == 0

    def popen_kwargs(self) -> dict[str, Any]:
        """subprocess arguments that start a child as this user (none when not root)."""
        if not self.switches:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": 0o022}

    def give(self, path: Path) -> None:
        """Make ``path`` (a directory the child writes into) this user's."""
        if self.switches:
            os.chown(path, self.uid, self.gid)

    def take_back(self, path: Path) -> None:
        """Give ``path`` and everything under it back to root, so a design running later
        as this user cannot change what it holds (a cached build another twin runs)."""
        if not self.switches:
            return
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.chown(Path(root) / name, 0, 0, follow_symlinks=False)
        os.chown(path, 0, 0)

    def cannot_reach(self, path: Path, want: int = EXECUTE) -> str | None:
        """Why this user cannot reach ``path`` with the permissions ``want`` (``READ``,
        ``WRITE``, ``EXECUTE`` or'ed; for a folder, EXECUTE is entering it), or None when it
        can. Every folder the kernel walks to ``path``, links followed, must let the user
        search it. The user's children run without supplementary groups, so only its own
        uid and gid count. ACLs are not read: a folder they open to the user is found
        closed (staged around, never trusted)."""
        if not self.switches:
            return None if os.access(path, _access_mode(want)) else f"{path}: no access"
        try:
            walked, target = _walk(Path(path))
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
        for folder, st in walked:
            if not self._allows(st, EXECUTE):
                return f"{folder} is {describe(st)}"
        if not self._allows(target, want):
            return f"{path} is {describe(target)}"
        return None

    def _allows(self, st: os.stat_result, want: int) -> bool:
        if st.st_uid == self.uid:
            bits = st.st_mode >> 6
        elif st.st_gid == self.gid:
            bits = st.st_mode >> 3
        else:
            bits = st.st_mode
        return (bits & want) == want

    def environment(self, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        """A child's environment: PATH, a locale, HOME, and ``extra``; nothing else of
        this process's (its variables may hold what the design has no business reading)."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "USER": self.user,
            "LOGNAME": self.user,
        }
        if "TMPDIR" in os.environ:
            env["TMPDIR"] = os.environ["TMPDIR"]
        env.update(extra or {})
        return env


def run_as(user: str | None = None) -> RunAs:
    """The identity to run designs as: ``user`` (default ``nobody``) when root, else this
    process's own user (only root may start processes as another)."""
    if os.geteuid() != 0:
        own = pwd.getpwuid(os.geteuid()).pw_name
        if user is not None and user != own:
            raise PrivilegeError(
                f"--run-as {user!r}: only root starts the twin's design as another user "
                f"(this process runs as {own!r}, and so will the design)"
            )
        return RunAs(own, os.geteuid(), os.getegid())
    name = DEFAULT_USER if user is None else user
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise PrivilegeError(
            f"user {name!r} does not exist: the twin compiles and runs designs as an "
            "unprivileged user (--run-as USER)"
        ) from None
    if entry.pw_uid == 0:
        raise PrivilegeError(
            f"user {name!r} is root: the twin compiles and runs designs (uploaded ones "
            "too) only as an unprivileged user"
        )
    return RunAs(name, entry.pw_uid, entry.pw_gid)


def _access_mode(want: int) -> int:
    return (
        (os.R_OK if want & READ else 0)
        | (os.W_OK if want & WRITE else 0)
        | (os.X_OK if want & EXECUTE else 0)
    )


def _walk(path: Path) -> tuple[list[tuple[Path, os.stat_result]], os.stat_result]:
    """The folders searched to resolve ``path`` (each with its stat), links followed as
    the kernel follows them, and the stat of what ``path`` names."""
    todo = list(Path(os.path.abspath(path)).parts[1:])
    here = Path("/")
    walked: list[tuple[Path, os.stat_result]] = []
    links = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            here = here.parent
            continue
        walked.append((here, os.stat(here)))
        entry = here / name
        st = os.lstat(entry)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise OSError(40, "too many levels of symbolic links")
            target = Path(os.readlink(entry))
            if target.is_absolute():
                here = Path("/")
                todo = list(target.parts[1:]) + todo
            else:
                todo = list(target.parts) + todo
            continue
        here = entry
    return walked, os.stat(here)


def describe(st: os.stat_result) -> str:
    """``drwx------ root:root``: a path's mode and owner, as ``ls -l`` shows them."""

    def name(table: Any, key: int) -> str:
        try:
            return str(table(key)[0])
        except KeyError:
            return str(key)

    owner = f"{name(pwd.getpwuid, st.st_uid)}:{name(grp.getgrgid, st.st_gid)}"
    return f"{stat.filemode(st.st_mode)} {owner}"
