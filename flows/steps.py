"""Prefect pull steps of the deployments, run on the worker when a flow run starts."""

from __future__ import annotations

import os
from pathlib import Path


def set_working_directory_from_env(variable: str = "EVOSYN_HOME") -> dict[str, str]:
    """Change into the folder the worker's ``variable`` names, read when the run starts.

    Prefect's ``{{ $VAR }}`` in a pull step is filled in by ``prefect deploy`` on the deployer's
    machine; this step reads the worker's own environment instead, so each worker (a checkout
    under any path, or an image with /opt/evosyn) runs from its own copy of the project.
    """
    directory = os.environ.get(variable, "")
    if not directory:
        raise RuntimeError(
            f"{variable} is not set on this worker: set it to the root of the EvoSyn checkout "
            "the worker runs from (make worker-cpu and make worker-gpu set it)"
        )
    if not Path(directory, "flows").is_dir():
        raise RuntimeError(
            f"{variable}={directory} on this worker is not an EvoSyn checkout (no flows/ in it)"
        )
    os.chdir(directory)
    return {"directory": directory}
