"""What ran a device benchmark: the accelerator, its driver and the library versions (``nerservice/lineage.py``'s
list), recorded in every result JSON of the GPU scripts.

Why: BENCHMARKS session 32 reran session 26's MS chain with the same code and seeds on another H100 and every
stage came out lower (students 85.68 against 86.47); neither session's JSON said which JAX, jaxlib, Keras or
driver had run, so that cause could be neither ruled in nor out."""
from __future__ import annotations

import subprocess
from typing import Any


def runtime() -> dict[str, Any]:
    """``{"device", "device_kind", "driver", "packages"}``; a field the machine cannot tell is left out."""
    from nerservice.lineage import package_versions

    record: dict[str, Any] = {"packages": package_versions()}
    try:
        import jax

        device = jax.devices()[0]
        record["device"], record["device_kind"] = str(device), device.device_kind
    except ImportError:
        record["device"] = "cpu (no jax)"
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if smi.returncode == 0 and smi.stdout.strip():
            record["driver"] = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass  # no NVIDIA driver here (a CPU run)
    return record
