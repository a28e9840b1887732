"""The ``huggingface`` interface: transformers models, batched, on the GPU by default.

``parameters``:

* ``model``: a hub id (``Qwen/Qwen2.5-1.5B-Instruct``) or a local folder. Hub ids are read
  from the cache first (``HF_HOME`` / ``HF_HUB_CACHE`` / ``cache_dir``) and downloaded only
  when missing and the hub is not offline (``HF_HUB_OFFLINE=1``).
* ``device``: ``auto`` (default: the GPU; stops with a clear error when there is none),
  ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
* ``dtype``: ``auto`` (bf16/fp16 on GPUs, fp32 on CPU), ``float32``, ``float16``, ``bfloat16``.
* ``load_in_4bit`` / ``load_in_8bit``: bitsandbytes quantisation (CUDA only).
* ``batch_size`` (default 32) and ``batch_tokens`` (default 32768): the largest batch,
  in prompts and in tokens (rows x (longest prompt + max_tokens)).
* ``revision``, ``trust_remote_code`` (default false), ``cache_dir``; ``threads``: torch's
  CPU threads (process-wide) for ``device: cpu`` on a busy machine.
* sampling, shared with ``llamacpp``: ``max_new_tokens`` / ``max_tokens`` (default 512),
  ``temperature`` (0 = greedy; default 0.7), ``top_p``, ``top_k``, ``seed``,
  ``repetition_penalty``; ``system_prompt``.

Calls that arrive together are answered together: the scheduler keeps up to
``2 x batch_size`` calls in flight, and the local-model host runs the waiting ones as one
padded batch (see :mod:`coeval_hf._transformers_engine`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.interfaces.base import Interface

from coeval_hf._devices import check_gpu_cheaply, validate_device, validate_dtype
from coeval_hf._hosted import HostedInterface
from coeval_hf._params import ParameterError, read_bool, read_int
from coeval_hf._transformers_engine import LoadSpec, TransformersEngine, hf_cache_dir

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials
    from coeval.config.model import ModelConfig

__all__ = ["HuggingFaceInterface"]


class HuggingFaceInterface(HostedInterface):
    name = "huggingface"

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        super().__init__(model, credentials)
        # problems found here are raised without the label: the runner names the model itself
        self.spec = self._load_spec(model.parameters)
        check_gpu_cheaply(self.spec.device, "")
        self._check_sampling()
        self.default_concurrency = 2 * self.spec.batch_size  # one batch runs while the next gathers
        self.max_concurrency = max(Interface.max_concurrency, self.default_concurrency)

    def _load_spec(self, params: Any) -> LoadSpec:
        label = ""
        source = params.get("model")
        if not isinstance(source, str) or not source.strip():
            raise ParameterError("parameters.model must be a Hugging Face model id or a local folder")
        source = source.strip()
        if source.startswith(("/", "./", "../", "~")) and not Path(source).expanduser().is_dir():
            raise ParameterError(f"parameters.model: no model folder at {source!r}")
        four = read_bool(params, "load_in_4bit", label)
        eight = read_bool(params, "load_in_8bit", label)
        if four and eight:
            raise ParameterError("parameters.load_in_4bit and load_in_8bit cannot both be true")
        device = validate_device(params.get("device"), label)
        if four or eight:
            option = "load_in_4bit" if four else "load_in_8bit"
            if importlib.util.find_spec("bitsandbytes") is None:
                raise ParameterError(f"parameters.{option} needs bitsandbytes: pip install bitsandbytes")
            if device in ("cpu", "mps"):
                raise ParameterError(f"parameters.{option} needs a CUDA device, not device: {device}")
        revision = params.get("revision")
        cache_dir = params.get("cache_dir")
        for field, value in (("revision", revision), ("cache_dir", cache_dir)):
            if value is not None and not isinstance(value, str):
                raise ParameterError(f"parameters.{field} must be a string, got {value!r}")
        token = self.credentials.get("api_key") if self.credentials is not None else None
        return LoadSpec(
            model=source,
            device=device,
            dtype=validate_dtype(params.get("dtype", params.get("torch_dtype")), label),
            load_in_4bit=four,
            load_in_8bit=eight,
            revision=revision,
            trust_remote_code=read_bool(params, "trust_remote_code", label),
            cache_dir=cache_dir,
            batch_size=read_int(params, "batch_size", label, minimum=1, default=32) or 32,
            batch_tokens=read_int(params, "batch_tokens", label, minimum=16, default=32768) or 32768,
            threads=read_int(params, "threads", label, minimum=1),
            token=token,
        )

    @property
    def slot_key(self) -> str:
        return self.spec.key()

    def _load(self) -> TransformersEngine:
        return TransformersEngine(self.spec, self.label)

    async def list_models(self) -> list[str]:
        """Models already in the hub cache (``coeval models``): the ones that load offline."""
        try:
            from huggingface_hub import scan_cache_dir

            info = scan_cache_dir(hf_cache_dir(self.spec.cache_dir))
        except Exception:  # no cache yet, or no huggingface_hub: nothing to list
            return []
        return sorted(repo.repo_id for repo in info.repos if repo.repo_type == "model")
