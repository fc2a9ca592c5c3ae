"""Who runs a twin's design: never root.

A twin started as root (its network namespace and TAP devices need it) keeps for itself
only what needs the privilege: the namespace, the TAP devices, the descriptors and files
it hands the design. Verilator's compile of a design (its HDL may come from an uploaded
``.fpg``) and the harness process that runs it are started as an unprivileged user
(``nobody`` unless told otherwise), without supplementary groups and with a minimal
environment, so an ``include`` of a file only root may read, a ``$system`` call or a
``$readmemh`` of one gets what that user would get. Started by another user, the twin
runs everything as that user: there is nothing to drop.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_USER = "nobody"


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
