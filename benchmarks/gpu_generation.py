"""Batched vs one-at-a-time generation through the ``huggingface`` interface.

Builds a randomly initialised Llama in-process (about 110M parameters on a GPU, about 4M on
a CPU; no downloads), saves it with a locally trained tokenizer and a chat template, and
loads it through the interface's real loading path. Then it measures generated tokens per
second:

* **one at a time**: each call awaited before the next starts (what a tool without
  batching does);
* **batched at size B** (B = 1, 2, 4, ... 64): ``4 x B`` calls issued at once, as the
  scheduler issues them, with ``batch_size: B``; the local-model host runs them as padded
  batches of up to B prompts.

Decoding is greedy with no end-of-sequence token, so every call generates exactly
``--new-tokens`` tokens and every row of the table does the same work per call.

    python -m benchmarks.gpu_generation                 # GPU when present, else a CPU-sized run
    python -m benchmarks.gpu_generation --device cpu --batch-sizes 1,4,16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: (hidden, layers, heads, intermediate) of the model built for each size.
SIZES = {
    "base": (768, 12, 12, 3072),  # ~110M parameters: a GPU run
    "small": (256, 4, 4, 1024),  # ~4M parameters: a CPU run in about a minute
}
WORDS = ["teacher", "student", "judge", "rubric", "answer", "question", "score", "model", "benchmark", "evaluation", "prompt", "response", "reference", "attribute", "factor", "sample", "batch", "token", "decode", "layer", "attention", "matrix", "vector", "gradient", "language", "reasoning", "summary", "translation", "arithmetic", "geometry", "history", "biology", "chemistry", "physics"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_model(folder: Path, size: str, seed: int = 0) -> int:
    """Save a random Llama + tokenizer to ``folder``; returns the parameter count."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    rng = random.Random(seed)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(400)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<unk>", "<pad>", "<|user|>", "<|system|>", "<|assistant|>", "<|end|>"]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=1024, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                        show_progress=False))
    # no end-of-sequence token: every call generates exactly max_new_tokens
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")
    hf_tok.chat_template = CHAT_TEMPLATE
    hidden, layers, heads, intermediate = SIZES[size]
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(hf_tok), hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=intermediate,
                         max_position_embeddings=2048, bos_token_id=None, eos_token_id=None,
                         pad_token_id=hf_tok.pad_token_id, tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = None
    model.generation_config.bos_token_id = None
    model.save_pretrained(folder)
    hf_tok.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def make_prompts(n: int, seed: int) -> list[str]:
    """Prompts of 8 to 60 words, so batches need real padding."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))) for _ in range(n)]


def interface(folder: Path, device: str, dtype: str, batch_size: int, new_tokens: int, threads: int | None) -> Any:
    from coeval.config.model import ModelConfig
    from coeval_hf.huggingface import HuggingFaceInterface

    params = {"model": str(folder), "device": device, "dtype": dtype, "temperature": 0,
              "max_new_tokens": new_tokens, "batch_size": batch_size, "batch_tokens": 10**7, "threads": threads}
    return HuggingFaceInterface(ModelConfig(f"bench-b{batch_size}", "huggingface", parameters=params))


async def timed(iface: Any, prompts: list[str], *, concurrent: bool) -> tuple[float, int]:
    from coeval.interfaces.base import GenerateRequest

    requests = [GenerateRequest(prompt=p, params=iface.model.parameters) for p in prompts]
    start = time.perf_counter()
    if concurrent:
        results = await asyncio.gather(*(iface.generate(r) for r in requests))
    else:
        results = [await iface.generate(r) for r in requests]
    _synchronize()
    return time.perf_counter() - start, sum(r.usage.output_tokens for r in results)


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


async def measure(folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    from rich.progress import Progress

    rows: list[dict[str, Any]] = []
    with Progress(transient=True) as progress:
        task = progress.add_task("generating", total=1 + len(args.batch_sizes))
        iface = interface(folder, args.device, args.dtype, 1, args.new_tokens, args.threads)
        await timed(iface, make_prompts(2, 99), concurrent=False)  # load + warm-up
        seconds, tokens = await timed(iface, make_prompts(args.sequential_calls, 1), concurrent=False)
        rows.append({"mode": "one at a time", "batch_size": 1, "calls": args.sequential_calls,
                     "mean_batch": 1.0, "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds})
        await iface.aclose()
        progress.advance(task)
        for size in args.batch_sizes:
            iface = interface(folder, args.device, args.dtype, size, args.new_tokens, args.threads)
            await timed(iface, make_prompts(size, 98), concurrent=True)  # warm-up at this shape
            assert iface._slot is not None
            before = len(iface._slot.batch_sizes)
            calls = max(args.min_calls, args.rounds * size)
            seconds, tokens = await timed(iface, make_prompts(calls, 2), concurrent=True)
            batches = iface._slot.batch_sizes[before:]
            rows.append({"mode": "batched", "batch_size": size, "calls": calls,
                         "mean_batch": statistics.fmean(batches), "tokens": tokens, "seconds": seconds,
                         "tokens_per_s": tokens / seconds})
            await iface.aclose()
            progress.advance(task)
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["speedup"] = row["tokens_per_s"] / base
    return rows


def environment(device: str, dtype: str, params: int, threads: int | None) -> dict[str, Any]:
    import torch
    import transformers
    from coeval_hf._devices import resolve_dtype

    gpu = torch.cuda.get_device_name(0) if device != "cpu" and torch.cuda.is_available() else None
    dtype = str(resolve_dtype(dtype, torch.device(device))).replace("torch.", "")
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "device": device, "gpu": gpu, "dtype": dtype, "parameters": params, "cpu": platform.processor() or None,
            "torch_threads": threads or torch.get_num_threads()}


def print_table(rows: list[dict[str, Any]], env: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    title = (f"{env['parameters'] / 1e6:.0f}M-parameter Llama, {env['gpu'] or 'CPU'}, {env['dtype']}, "
             f"torch {env['torch']}")
    table = Table(title=title)
    for column in ("mode", "batch size", "calls", "mean batch", "tokens", "seconds", "tokens/s", "speed-up"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for r in rows:
        table.add_row(r["mode"], str(r["batch_size"]), str(r["calls"]), f"{r['mean_batch']:.1f}", str(r["tokens"]),
                      f"{r['seconds']:.2f}", f"{r['tokens_per_s']:.0f}", f"{r['speedup']:.1f}x")
    Console(width=max(100, Console().width)).print(table)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_generation", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto (GPU when present, else cpu), cpu, cuda, cuda:N")
    parser.add_argument("--size", choices=sorted(SIZES), help="model size (default: base on a GPU, small on CPU)")
    parser.add_argument("--dtype", default="auto", help="auto (bf16/fp16 on GPU, fp32 on CPU), float16, bfloat16, ...")
    parser.add_argument("--batch-sizes", help="comma-separated (default 1,2,4,8,16,32,64 on GPU; 1,2,4,8,16 on CPU)")
    parser.add_argument("--new-tokens", type=int, help="tokens generated per call (default 128 on GPU, 32 on CPU)")
    parser.add_argument("--rounds", type=int, default=4, help="batches per batch size (calls = rounds x size)")
    parser.add_argument("--min-calls", type=int, default=8, help="at least this many calls per batch size")
    parser.add_argument("--sequential-calls", type=int, default=8, help="calls in the one-at-a-time row")
    parser.add_argument("--threads", type=int,
                        help="torch CPU threads (default on CPU: half the CPUs, which stays steady on a busy machine)")
    parser.add_argument("--out", default="runs/bench/gpu_generation.json", help="where to write the JSON results")
    args = parser.parse_args(argv)
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = args.device != "cpu"
    args.size = args.size or ("base" if gpu else "small")
    args.new_tokens = args.new_tokens or (128 if gpu else 32)
    default_sizes = "1,2,4,8,16,32,64" if gpu else "1,2,4,8,16"
    args.batch_sizes = [int(b) for b in (args.batch_sizes or default_sizes).split(",")]
    if args.threads is None and not gpu:
        from coeval_hf.llamacpp import default_threads

        args.threads = default_threads()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="coeval-bench-model-") as tmp:
        params = build_model(Path(tmp), args.size)
        env = environment(args.device, args.dtype, params, args.threads)
        rows = asyncio.run(measure(Path(tmp), args))
    from coeval_hf._host import get_host

    get_host().unload_all()
    print_table(rows, env)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "gpu_generation", "environment": env, "new_tokens": args.new_tokens,
                               "results": rows}, indent=2) + "\n")
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
