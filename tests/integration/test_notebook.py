"""Execute notebooks/quickstart.ipynb so that it cannot rot."""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


@pytest.mark.slow  # (eighth session) 24 s of the main step and a third JAX process at its memory peak; CI's second step
def test_quickstart_notebook_runs_without_errors(tmp_path, lean_worker):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "identical: (1080, 13)" in text and "private: True" in text
