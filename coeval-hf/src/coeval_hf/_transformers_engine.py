"""A transformers causal LM loaded for batched chat generation (runs in the worker thread).

Batching is what makes a local GPU worth using: one ``generate()`` over 32 prompts costs
little more than over one. Prompts are rendered with the tokenizer's chat template,
left-padded (so every row's new tokens start at the same column), and grouped only with
calls that decode the same way; a batch holds at most ``batch_size`` prompts and
``batch_tokens`` tokens (longest prompt + ``max_tokens``, times rows), which bounds the KV
cache. A batch that runs out of GPU memory is split in half and retried, and the engine
keeps the smaller size.
"""

from __future__ import annotations

import copy
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from coeval.interfaces.base import FatalModelError, GenerateResult, ModelError, TransientModelError, Usage

from coeval_hf._constrained import json_mask_processor
from coeval_hf._devices import resolve_device, resolve_dtype
from coeval_hf._host import PendingCall
from coeval_hf._params import Sampling, read_sampling

__all__ = ["LoadSpec", "TransformersEngine", "hf_cache_dir"]


@attrs.frozen
class LoadSpec:
    """Everything that decides which weights are loaded, where and how."""

    model: str
    device: str = "auto"
    dtype: str = "auto"
    load_in_4bit: bool = False
    load_in_8bit: bool = False
    revision: str | None = None
    trust_remote_code: bool = False
    cache_dir: str | None = None
    batch_size: int = 32
    batch_tokens: int = 32768
    threads: int | None = None  # torch CPU threads (process-wide); None keeps torch's default
    token: str | None = attrs.field(default=None, repr=False, eq=False)

    def key(self) -> str:
        return "|".join(
            str(v) for v in ("huggingface", self.model, self.revision, self.device, self.dtype, self.load_in_4bit,
                             self.load_in_8bit, self.trust_remote_code, self.cache_dir, self.batch_size,
                             self.batch_tokens, self.threads)
        )


def hf_cache_dir(explicit: str | None = None) -> str | None:
    """The hub cache to read, from ``cache_dir``, ``HF_HUB_CACHE`` or ``HF_HOME`` (read now).

    huggingface_hub reads these variables once, at import; reading them at load time means a
    process that sets ``HF_HOME`` after something imported the hub still gets its cache.
    """
    if explicit:
        return str(Path(explicit).expanduser())
    if os.environ.get("HF_HUB_CACHE"):
        return str(Path(os.environ["HF_HUB_CACHE"]).expanduser())
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    return None


def _hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


class TransformersEngine:
    """One loaded model + tokenizer; every method runs in the local-model worker thread."""

    def __init__(self, spec: LoadSpec, label: str) -> None:
        import torch

        self.spec = spec
        self.label = label
        self.device = resolve_device(spec.device, label)
        self.dtype = resolve_dtype(spec.dtype, self.device)
        self.batch_size = spec.batch_size
        self._torch = torch
        if spec.threads:
            torch.set_num_threads(spec.threads)
        self.tokenizer, self.model = self._load()
        self.model.eval()
        self.context = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)
        self.eos_ids = self._eos_ids()

    # -- loading -------------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        local = Path(self.spec.model).expanduser()
        if local.is_dir():
            return self._from_pretrained(str(local), local_only=True)
        try:
            return self._from_pretrained(self.spec.model, local_only=True)  # the cache first: no network
        except OSError as cache_miss:
            if _hub_offline():
                where = hf_cache_dir(self.spec.cache_dir) or "the default Hugging Face cache"
                raise FatalModelError(
                    f"{self.label}: {self.spec.model!r} is not a local folder and not in {where}, and the hub is "
                    "offline (HF_HUB_OFFLINE); download it first or set parameters.model to a local folder"
                ) from cache_miss
        return self._from_pretrained(self.spec.model, local_only=False)

    def _from_pretrained(self, source: str, *, local_only: bool) -> tuple[Any, Any]:

        common: dict[str, Any] = {
            "local_files_only": local_only,
            "trust_remote_code": self.spec.trust_remote_code,
            "cache_dir": hf_cache_dir(self.spec.cache_dir),
        }
        if self.spec.revision:
            common["revision"] = self.spec.revision
        if self.spec.token:
            common["token"] = self.spec.token
        from transformers.utils import logging as transformers_logging

        bars_were_on = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()  # a per-load bar would break the run's own progress display
        try:
            return self._build(source, common)
        finally:
            if bars_were_on:
                transformers_logging.enable_progress_bar()

    def _build(self, source: str, common: dict[str, Any]) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source, **common)
        model_kwargs: dict[str, Any] = {"dtype": self.dtype}
        quantization = self._quantization_config()
        if quantization is not None:
            model_kwargs["quantization_config"] = quantization
            model_kwargs["device_map"] = {"": self.device}
        model = AutoModelForCausalLM.from_pretrained(source, **common, **model_kwargs)
        if quantization is None:
            model = model.to(self.device)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
        return tokenizer, model

    def _quantization_config(self) -> Any:
        if not (self.spec.load_in_4bit or self.spec.load_in_8bit):
            return None
        option = "load_in_4bit" if self.spec.load_in_4bit else "load_in_8bit"
        if importlib.util.find_spec("bitsandbytes") is None:
            raise FatalModelError(f"{self.label}: parameters.{option} needs bitsandbytes: pip install bitsandbytes")
        if self.device.type != "cuda":
            raise FatalModelError(f"{self.label}: parameters.{option} needs a CUDA device, not {self.device}")
        from transformers import BitsAndBytesConfig

        if self.spec.load_in_4bit:
            return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=self.dtype)
        return BitsAndBytesConfig(load_in_8bit=True)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        for value in (configured, self.tokenizer.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        return ids

    def unload(self) -> None:
        torch = self._torch
        self.model = None
        self.tokenizer = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- batching ------------------------------------------------------------------------------

    def render(self, call: PendingCall) -> list[int]:
        """The prompt's token ids, with the chat template applied (cached on the call)."""
        cached: list[int] | None = call.scratch.get("input_ids")
        if cached is not None:
            return cached
        request = call.request
        system = request.system or request.params.get("system_prompt")
        if getattr(self.tokenizer, "chat_template", None):
            messages = [{"role": "system", "content": str(system)}] if system else []
            messages.append({"role": "user", "content": request.prompt})
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        else:  # a base model without a template: plain text, the tokenizer's own special tokens
            text = f"{system}\n\n{request.prompt}" if system else request.prompt
            ids = self.tokenizer(text)["input_ids"]
        input_ids: list[int] = list(ids)
        call.scratch["input_ids"] = input_ids
        return input_ids

    @staticmethod
    def sampling_of(call: PendingCall, label: str) -> Sampling:
        cached = call.scratch.get("sampling")
        if cached is None:
            cached = call.scratch["sampling"] = read_sampling(call.request.params, label)
        return cached

    def select_batch(self, pending: Sequence[PendingCall]) -> list[PendingCall]:
        """The oldest call plus the waiting calls that decode like it, up to the size limits."""
        first = self.sampling_of(pending[0], self.label)
        batch: list[PendingCall] = []
        longest = 0
        for call in pending:
            if self.sampling_of(call, self.label) != first:
                continue
            length = max(longest, len(self.render(call)))
            if batch and (len(batch) >= self.batch_size or
                          (len(batch) + 1) * (length + first.max_tokens) > self.spec.batch_tokens):
                break
            batch.append(call)
            longest = length
        return batch

    def run_batch(self, calls: Sequence[PendingCall]) -> list[GenerateResult | ModelError]:
        sampling = self.sampling_of(calls[0], self.label)
        results: list[GenerateResult | ModelError | None] = [None] * len(calls)
        runnable: list[int] = []
        for i, call in enumerate(calls):
            n = len(self.render(call))
            if self.context and n >= self.context:
                results[i] = FatalModelError(
                    f"{self.label}: the prompt has {n} tokens, the model's context is {self.context}"
                )
            else:
                runnable.append(i)
        if runnable:
            for i, outcome in zip(runnable, self._generate([calls[i] for i in runnable], sampling), strict=True):
                results[i] = outcome
        return [r for r in results if r is not None]

    def _generate(self, calls: Sequence[PendingCall], sampling: Sampling) -> list[GenerateResult | ModelError]:
        torch = self._torch
        try:
            return self._generate_once(calls, sampling)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(calls) == 1:
                return [FatalModelError(
                    f"{self.label}: out of GPU memory for a single prompt; lower max_tokens, use a smaller dtype "
                    "or load_in_4bit"
                )]
            half = len(calls) // 2
            self.batch_size = max(1, half)  # remember: this size did not fit
            return self._generate(calls[:half], sampling) + self._generate(calls[half:], sampling)
        except Exception as exc:
            return [TransientModelError(f"{self.label}: generation failed: {type(exc).__name__}: {exc}")] * len(calls)

    def _generate_once(self, calls: Sequence[PendingCall], sampling: Sampling) -> list[GenerateResult | ModelError]:
        torch = self._torch
        rows = [self.render(c) for c in calls]
        padded = self.tokenizer.pad({"input_ids": rows}, padding=True, return_tensors="pt")
        input_ids = padded["input_ids"].to(self.model.device)
        attention_mask = padded["attention_mask"].to(self.model.device)
        width = input_ids.shape[1]
        max_new = sampling.max_tokens
        if self.context:
            max_new = max(1, min(max_new, self.context - width))
        config = self._generation_config(sampling, max_new)
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        mask = json_mask_processor(self.tokenizer, [c.request.json_schema for c in calls], width, max_new)
        extra: dict[str, Any] = {"logits_processor": [mask]} if mask is not None else {}
        with torch.inference_mode():
            output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config,
                                         **extra)
        results: list[GenerateResult | ModelError] = []
        for row, prompt_ids in zip(output[:, width:].tolist(), rows, strict=True):
            new_tokens, ended = self._until_eos(row)
            text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
            results.append(GenerateResult(text=text, usage=Usage(len(prompt_ids), len(new_tokens)), cost_usd=0.0,
                                          model=self.spec.model, finish_reason="stop" if ended else "length"))
        return results

    def _until_eos(self, row: list[int]) -> tuple[list[int], bool]:
        """The generated tokens up to and including the first end-of-sequence (no padding),
        and whether there was one: without it the token limit cut the reply."""
        for i, token in enumerate(row):
            if token in self.eos_ids:
                return row[: i + 1], True
        return row, False

    def _generation_config(self, sampling: Sampling, max_new: int) -> Any:
        config = copy.deepcopy(self.model.generation_config)
        config.max_new_tokens = max_new
        config.max_length = None
        config.pad_token_id = self.tokenizer.pad_token_id
        config.eos_token_id = sorted(self.eos_ids) or None
        if sampling.repetition_penalty is not None:
            config.repetition_penalty = sampling.repetition_penalty
        if sampling.greedy:
            config.do_sample = False
            config.temperature = config.top_p = config.top_k = None
        else:  # the model's own top_p / top_k stay unless the config sets them
            config.do_sample = True
            config.temperature = sampling.temperature
            if sampling.top_p is not None:
                config.top_p = sampling.top_p
            if sampling.top_k is not None:
                config.top_k = sampling.top_k
        return config
