"""On-disk folders jaxdp writes compiled programs to, and reads them back from (private helper)."""

from __future__ import annotations

import os
import stat


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _safe_dir(st: os.stat_result, uid: int | None, *, own: bool) -> bool:
    """A folder no one but this user (or root, for the folders above it) can change: `own` folders must be
    this user's and writable by no one else; an ancestor may be root's, and may be writable by others only with
    the sticky bit (e.g. /tmp: others cannot rename or remove what this user made there)."""
    if not stat.S_ISDIR(st.st_mode):
        return False
    if uid is not None and st.st_uid != uid and (own or st.st_uid != 0):
        return False
    if st.st_mode & 0o022:
        return not own and bool(st.st_mode & stat.S_ISVTX)
    return True


def private_folder(path: str) -> str | None:
    """Create `path` (mode 0700, and its missing parents) if needed; its resolved path iff it is a folder of this
    user that no one else can change, else None. Use the returned path for every file operation after the check.

    A compiled program loaded from a cache folder runs like the installed package's code, so a folder another
    user owns or may write to is never used — nor one under a folder another user may write to (found in
    review: only the last folder was checked, makedirs created its parents with the umask's mode, group-
    writable under umask 002, and a folder in a world-writable, non-sticky folder was used: whoever can write
    a parent can swap the cache folder for a link to their own entries). Symbolic links are resolved first, and
    every folder from the root down to the cache is checked; the returned path has no links left to swap."""
    uid = _uid()
    try:
        missing = []
        full = os.path.abspath(os.path.expanduser(os.fspath(path)))
        head = full
        while not os.path.lexists(head):
            missing.append(head)
            parent = os.path.dirname(head)
            if parent == head:
                return None
            head = parent
        for folder in reversed(missing):  # each created private (makedirs gives parents the umask's mode)
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:  # made at the same moment by another process: checked below like any folder
                pass
        real = os.path.realpath(full)  # the expanded path (found in review: "~/x" was created, then checked unexpanded)
        if not _safe_dir(os.stat(real), uid, own=True):
            return None
        parent = os.path.dirname(real)
        while True:
            if not _safe_dir(os.stat(parent), uid, own=False):
                return None
            up = os.path.dirname(parent)
            if up == parent:
                return real
            parent = up
    except (OSError, ValueError):
        return None


def read_private_file(path: str) -> bytes | None:
    """The bytes of a regular file of this user that no one else can write, opened without following a link;
    None if it is absent, unreadable or not such a file."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        uid = _uid()
        if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid) or st.st_mode & 0o022:
            return None
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read()
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
