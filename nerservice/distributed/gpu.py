"""Pin a Spark task to the GPUs Spark assigned it.

With ``spark.executor.resource.gpu.amount`` / ``spark.task.resource.gpu.amount`` set, each task sees its
GPU addresses in ``TaskContext.resources()["gpu"].addresses`` (found by the workers' discovery script).
Setting ``CUDA_VISIBLE_DEVICES`` to exactly those addresses *before* TensorFlow/JAX initialise CUDA
makes two tasks on one host use different GPUs instead of both grabbing GPU 0.  Without GPU resources
nothing is changed (CPU clusters, ``local[*]``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPU_RESOURCE = "gpu"


def gpu_addresses(resources: Mapping[str, Any], *, name: str = GPU_RESOURCE) -> list[str]:
    """Addresses of resource ``name``: accepts pyspark ``ResourceInformation`` objects or plain lists."""
    info = resources.get(name)
    if info is None:
        return []
    addresses = getattr(info, "addresses", info)
    return [str(a).strip() for a in addresses if str(a).strip()]


def gpu_env(resources: Mapping[str, Any], *, name: str = GPU_RESOURCE) -> dict[str, str]:
    """Environment updates pinning the task to its GPUs ({} when the task was given none)."""
    addresses = gpu_addresses(resources, name=name)
    return {"CUDA_VISIBLE_DEVICES": ",".join(addresses)} if addresses else {}
