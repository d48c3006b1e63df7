"""On-disk folders jaxdp writes compiled programs to (private helper)."""

from __future__ import annotations

import os


def private_folder(path: str) -> bool:
    """Create `path` (mode 0700) if needed; True iff it is a folder of this user that no one else can write.

    A compiled program loaded from a cache folder runs like the installed package's code, so a folder another
    user owns or may write to is never used."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return os.path.isdir(path) and not (st.st_mode & 0o022)
