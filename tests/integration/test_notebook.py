"""Execute notebooks/quickstart.ipynb so that it cannot rot.

Marked ``slow``: CI runs it in its second step (`python -m pytest -q -m slow`). Its Jupyter kernel is a
third JAX process (≈ 0.56 GB) beside the two workers, which put the default run's peak memory over 2 GB.
"""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_notebook_runs_without_errors(tmp_path, lean_worker):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "identical: (1080, 13)" in text and "private: True" in text
