"""Where a transformers model runs: ``device`` and ``dtype`` values, and the GPU check.

``device: auto`` means "the GPU": local transformers models are only practical there, so
with no GPU the run stops at once with one line that names ``device: cpu`` as the way out,
instead of grinding through a benchmark at a few tokens per second. The first check needs
no torch (a look at the driver files), so it runs when the interface is built, before any
work; the exact check (``torch.cuda.is_available()``) runs when the model loads.
"""

from __future__ import annotations

import ctypes.util
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

from coeval.interfaces.base import FatalModelError

from coeval_hf._params import ParameterError, prefixed

__all__ = [
    "DTYPES",
    "DeviceUnavailableError",
    "gpu_may_be_present",
    "resolve_device",
    "resolve_dtype",
    "validate_device",
    "validate_dtype",
]

_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
DTYPES = ("auto", "float32", "float16", "bfloat16")
_DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}


class DeviceUnavailableError(FatalModelError):
    """The configured device does not exist on this machine."""


def validate_device(value: Any, label: str) -> str:
    spec = "auto" if value is None else str(value).strip().lower()
    if not _DEVICE.match(spec):
        raise ParameterError(prefixed(label, f"parameters.device must be auto, cpu, cuda, cuda:N or mps, got {value!r}"))
    return spec


def validate_dtype(value: Any, label: str) -> str:
    spec = "auto" if value is None else str(value).strip().lower()
    spec = _DTYPE_ALIASES.get(spec, spec)
    if spec not in DTYPES:
        raise ParameterError(prefixed(label, f"parameters.dtype must be one of {', '.join(DTYPES)}, got {value!r}"))
    return spec


def no_gpu_error(label: str, spec: str, detail: str = "no CUDA or Apple MPS device found") -> DeviceUnavailableError:
    return DeviceUnavailableError(prefixed(
        label,
        f"device: {spec} needs a GPU and this machine has none ({detail}); "
        "set parameters.device: cpu to run the model on the CPU instead",
    ))


def gpu_may_be_present() -> bool:
    """A cheap look for a GPU driver, without importing torch (False means surely none)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():  # already imported: ask it directly
        return True
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    cuda_hidden = visible is not None and visible.strip() in ("", "-1")
    if not cuda_hidden:
        if Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists():
            return True
        if Path("/dev/kfd").exists():  # AMD ROCm
            return True
        if Path("/usr/lib/wsl/lib/libcuda.so").exists():  # CUDA under WSL
            return True
        if ctypes.util.find_library("cuda"):  # a driver library in the loader's path
            return True
    return platform.system() == "Darwin" and platform.machine() == "arm64"  # Apple MPS


def check_gpu_cheaply(spec: str, label: str) -> None:
    """Fail now, before any work, when ``spec`` needs a GPU and there surely is none."""
    if spec != "cpu" and not gpu_may_be_present():
        raise no_gpu_error(label, spec)


def resolve_device(spec: str, label: str) -> Any:
    """The ``torch.device`` for ``spec`` (imports torch); raises when it is not there."""
    import torch

    cuda_ok = torch.cuda.is_available()
    mps_ok = bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    if spec == "cpu":
        return torch.device("cpu")
    if spec == "auto":
        if cuda_ok:
            return torch.device("cuda", torch.cuda.current_device())
        if mps_ok:
            return torch.device("mps")
        raise no_gpu_error(label, spec, _why_no_gpu(torch))
    if spec == "mps":
        if not mps_ok:
            raise no_gpu_error(label, spec, "no Apple MPS device")
        return torch.device("mps")
    if not cuda_ok:
        raise no_gpu_error(label, spec, _why_no_gpu(torch))
    device = torch.device(spec)
    index = device.index or 0
    if index >= torch.cuda.device_count():
        raise DeviceUnavailableError(prefixed(
            label, f"parameters.device is {spec} but this machine has {torch.cuda.device_count()} CUDA device(s)"
        ))
    return torch.device("cuda", index)


def _why_no_gpu(torch: Any) -> str:
    if torch.version.cuda is None and gpu_may_be_present():
        return f"this torch {torch.__version__} is a CPU-only build"
    return "no CUDA or Apple MPS device found"


def resolve_dtype(spec: str, device: Any) -> Any:
    """The torch dtype for ``spec`` on ``device``: auto is bf16/fp16 on GPUs, fp32 on CPU."""
    import torch

    if spec != "auto":
        return getattr(torch, spec)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32
