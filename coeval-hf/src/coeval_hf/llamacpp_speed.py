"""How fast llama.cpp reads prompts and writes replies here, for the plan's time estimate.

The speed of a CPU engine depends on the machine and on what else runs on it: on one
two-core machine the same quick start took 68 s one day and 106 s another. A fixed figure
per GB of file is therefore off by that much, so the plan measures instead: the first time
a model's file is planned for, two short generations of filler text (about a second in
all, sized from the file-size guess) read llama.cpp's own timings: seconds per prompt
token, per reply token, and per reply token under a JSON schema (its grammar slows
sampling; the quick start's judges wrote 15 ms a token where its students wrote 11).
They are not calls of the experiment, and are made once per file and threads in a
process. Where the file cannot be loaded, the guess stands.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from coeval.contract.types import TokenSeconds

from coeval_hf._params import ParameterError
from coeval_hf.embedded import EmbeddedModelMissing
from coeval_hf.llamacpp import DEFAULT_CONTEXT, LlamaCppEngine, default_threads, engine_key, model_file

if TYPE_CHECKING:
    from coeval.config.model import ModelConfig

__all__ = ["SECONDS_PER_TOKEN_GB_THREAD", "measure", "seconds_per_token"]

#: The guess without a measurement: seconds per token read or written, per GB of GGUF file,
#: on one thread (the shipped SmolLM2-135M, 98 MB, ran the quick start at 7.8 ms a token on
#: one thread of a busy two-core machine). It also sizes the measurement.
SECONDS_PER_TOKEN_GB_THREAD = 0.08
#: Seconds the measurement should take at the guessed speed: 60% reading, 20% writing plain
#: text and 20% JSON.
_MEASURE_S = 1.0
_PROMPT_TOKENS = (8, 96)
_REPLY_TOKENS = (4, 16)
_PROSE = ("the river carries sand from the hills down to the sea and the delta grows a little "
          "every year while the farmers plant rice along its banks")

_SCHEMA = {"name": "summary", "schema": {"type": "object", "properties": {"summary": {"type": "string"}},
                                         "required": ["summary"], "additionalProperties": False}}

_measured: dict[tuple[str, int, int], TokenSeconds | None] = {}
_lock = threading.Lock()


def _clamp(value: float, bounds: tuple[int, int]) -> int:
    return max(bounds[0], min(bounds[1], round(value)))


def _per_token(timings: Any, count: str, ms: str) -> float | None:
    """Seconds per token of one of llama.cpp's timings (prompt or predicted), if it counted any."""
    n = timings.get(count) if isinstance(timings, dict) else None
    if not isinstance(n, int) or n <= 0 or not isinstance(timings.get(ms), int | float):
        return None
    return float(timings[ms]) / n / 1000


def measure(path: Path, *, threads: int, n_gpu_layers: int, guess: float) -> TokenSeconds | None:
    """Seconds per prompt token and per reply token, plain and under a JSON schema, of two
    short generations on ``path`` (a file llama.cpp loads for them and lets go); None when
    it cannot be loaded or run."""
    prompt_tokens = _clamp(_MEASURE_S * 0.6 / guess, _PROMPT_TOKENS)
    reply_tokens = _clamp(_MEASURE_S * 0.2 / guess, _REPLY_TOKENS)
    prose = _PROSE.split()
    words = " ".join(prose[i % len(prose)] for i in range(prompt_tokens))
    plain: dict[str, Any] = {"messages": [{"role": "user", "content": words}], "max_tokens": reply_tokens,
                             "temperature": 0.0, "ignore_eos": True}
    # the same words first: the engine reads only the new end of this prompt
    structured = {**plain, "messages": [{"role": "user", "content": f"{words}. Summarise that as JSON."}],
                  "ignore_eos": False, "cache_prompt": True,
                  "response_format": {"type": "json_schema", "json_schema": _SCHEMA}}
    engine = None
    try:
        engine = LlamaCppEngine(path, n_ctx=512, threads=threads, n_gpu_layers=n_gpu_layers, verbose=False,
                                label="speed measurement")
        timings = [(reply or {}).get("timings") for reply in (engine.reply(plain), engine.reply(structured))]
    except Exception:  # not loadable here (a broken file, no memory): the guess stands
        return None
    finally:
        if engine is not None:
            engine.unload()
    prompt = _per_token(timings[0], "prompt_n", "prompt_ms")
    reply = _per_token(timings[0], "predicted_n", "predicted_ms")
    if prompt is None or reply is None:
        return None
    return TokenSeconds(prompt=prompt, reply=reply, structured=_per_token(timings[1], "predicted_n", "predicted_ms"))


def seconds_per_token(model: ModelConfig) -> TokenSeconds | float | None:
    """The plan's token speeds of ``model`` (``seconds_per_token`` of the interface's facts):
    measured on this machine (:func:`measure`, once per file and threads), the file-size
    guess where that fails, and the guess alone for a model served on a cluster (not on this
    machine). None when the file is not found."""
    params = model.parameters
    try:
        path = model_file(params.get("model"))
    except (EmbeddedModelMissing, ParameterError):
        return None
    threads = params.get("threads")
    threads = threads if isinstance(threads, int) and threads > 0 else default_threads()
    guess = SECONDS_PER_TOKEN_GB_THREAD * path.stat().st_size / 1e9 / threads
    if params.get("cluster"):
        return guess
    gpu_layers = params.get("n_gpu_layers")
    gpu_layers = gpu_layers if isinstance(gpu_layers, int) else 0
    n_ctx = params.get("n_ctx")
    n_ctx = n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else DEFAULT_CONTEXT
    key = (str(path.resolve()), threads, gpu_layers)
    with _lock:
        if key not in _measured:
            _measured[key] = measure(path, threads=threads, n_gpu_layers=gpu_layers, guess=guess)
        measured = _measured[key] or TokenSeconds(guess, guess)
    return attrs.evolve(measured, engine=engine_key(path, n_ctx=n_ctx, threads=threads, n_gpu_layers=gpu_layers))
