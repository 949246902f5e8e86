"""Running the study notebooks: the manifest, a kernel that imports ``reveal_lab``,
papermill execution in order with a stop at the first failing cell, and an
``index.html`` linking every executed notebook, figure and table."""

from reveal_lab.notebooks._index import NotebookResult, cache_section, write_index
from reveal_lab.notebooks._kernel import KERNEL_NAME, ensure_kernel, install_kernel, kernel_spec
from reveal_lab.notebooks._manifest import (
    INJECTED,
    PRESET_NAMES,
    Manifest,
    NotebookEntry,
    discover_notebooks,
    load_manifest,
    notebooks_dir,
)
from reveal_lab.notebooks._overrides import notebook_overrides, parse_param, resume_from
from reveal_lab.notebooks._params import notebook_parameters
from reveal_lab.notebooks._runner import (
    ClaimsFailed,
    NotebookFailed,
    expected_outputs,
    run_concurrently,
    run_manifest,
    run_notebook,
)

__all__ = [
    "cache_section",
    "notebook_overrides",
    "parse_param",
    "resume_from",
    "KERNEL_NAME",
    "INJECTED",
    "PRESET_NAMES",
    "Manifest",
    "NotebookEntry",
    "NotebookResult",
    "ClaimsFailed",
    "NotebookFailed",
    "load_manifest",
    "discover_notebooks",
    "notebooks_dir",
    "notebook_parameters",
    "run_concurrently",
    "run_manifest",
    "run_notebook",
    "expected_outputs",
    "write_index",
    "ensure_kernel",
    "install_kernel",
    "kernel_spec",
]
