"""The README's Python examples run as written, each block on its own (in a fresh process, in a temporary
folder): a user copies one block, not the page."""

import os
import pathlib
import re
import subprocess
import sys

import jax
import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_python_block_runs_on_its_own(tmp_path, i):
    # the suite's persistent compilation cache (it never changes what a program computes) spares recompiling
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir or "",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    proc = subprocess.run([sys.executable, "-c", BLOCKS[i]], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, f"README block {i} failed:\n{BLOCKS[i]}\n{proc.stderr[-2000:]}"
