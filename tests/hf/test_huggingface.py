"""The ``huggingface`` interface on a tiny random Llama, through the real loading path (CPU)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult
from coeval_hf import _devices
from coeval_hf._devices import DeviceUnavailableError
from coeval_hf._host import get_host
from coeval_hf._params import ParameterError
from coeval_hf.huggingface import HuggingFaceInterface

PROMPTS = [
    "The quick brown fox",
    "Hello",
    "A teacher writes questions, a student answers them, and a judge scores the answers. What next?",
    "judge",
    "Large language models are evaluated on benchmarks",
    "What is the capital of France?",
]


def make(folder: Path | str, name: str = "tiny", **params: Any) -> HuggingFaceInterface:
    params = {"model": str(folder), "device": "cpu", "temperature": 0, "max_tokens": 16, **params}
    return HuggingFaceInterface(ModelConfig(name, "huggingface", roles=("student",), parameters=params))


def ask(iface: HuggingFaceInterface, prompt: str, **overrides: Any) -> GenerateRequest:
    return GenerateRequest(prompt=prompt, params={**iface.model.parameters, **overrides})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def one_at_a_time(iface: HuggingFaceInterface, prompts: list[str], **overrides: Any) -> list[GenerateResult]:
    return [await iface.generate(ask(iface, p, **overrides)) for p in prompts]


async def all_at_once(iface: HuggingFaceInterface, prompts: list[str], **overrides: Any) -> list[GenerateResult]:
    return list(await asyncio.gather(*(iface.generate(ask(iface, p, **overrides)) for p in prompts)))


@pytest.mark.slow
def test_batched_greedy_generation_equals_one_at_a_time(tiny_model_dir: Path) -> None:
    iface = make(tiny_model_dir)

    async def main() -> tuple[list[GenerateResult], list[GenerateResult]]:
        single = await one_at_a_time(iface, PROMPTS)
        batched = await all_at_once(iface, PROMPTS)
        await iface.aclose()
        return single, batched

    single, batched = run(main())
    sizes = iface_slot_batches(tiny_model_dir)
    assert sizes[: len(PROMPTS)] == [1] * len(PROMPTS)
    assert max(sizes[len(PROMPTS):]) > 1, "concurrent calls should have run as one padded batch"
    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.usage for r in batched] == [r.usage for r in single]  # padding is not counted as input
    assert all(r.usage.output_tokens > 0 for r in single)


_batches_seen: dict[str, list[int]] = {}


def iface_slot_batches(folder: Path) -> list[int]:
    return _batches_seen[str(folder)]


@pytest.fixture(autouse=True)
def _remember_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record each slot's batch sizes by model folder (slots are dropped when interfaces close)."""
    host = get_host()
    original = host.acquire

    def acquire(key: str, loader: Any, label: str) -> Any:
        slot = original(key, loader, label)
        _batches_seen[key.split("|")[1]] = slot.batch_sizes
        return slot

    monkeypatch.setattr(host, "acquire", acquire)


def test_chat_template_and_system_prompt_are_applied(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    iface = make(tiny_model_dir)

    async def main() -> tuple[GenerateResult, GenerateResult]:
        plain = await iface.generate(ask(iface, "Hello world"))
        with_system = await iface.generate(GenerateRequest(prompt="Hello world", params=iface.model.parameters,
                                                           system="You are a judge."))
        await iface.aclose()
        return plain, with_system

    plain, with_system = run(main())
    user_only = tok.apply_chat_template([{"role": "user", "content": "Hello world"}], add_generation_prompt=True,
                                        tokenize=False)
    both = tok.apply_chat_template([{"role": "system", "content": "You are a judge."},
                                    {"role": "user", "content": "Hello world"}], add_generation_prompt=True,
                                   tokenize=False)
    assert user_only.startswith("<|user|>") and user_only.endswith("<|assistant|>")
    assert plain.usage.input_tokens == len(tok(user_only, add_special_tokens=False)["input_ids"])
    assert with_system.usage.input_tokens == len(tok(both, add_special_tokens=False)["input_ids"])
    assert plain.usage.input_tokens > len(tok("Hello world", add_special_tokens=False)["input_ids"])


def test_model_without_chat_template_gets_the_plain_prompt(tiny_model_no_template_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_no_template_dir))
    iface = make(tiny_model_no_template_dir)

    async def main() -> GenerateResult:
        result = await iface.generate(ask(iface, "Hello world"))
        await iface.aclose()
        return result

    assert run(main()).usage.input_tokens == len(tok("Hello world")["input_ids"])


@pytest.mark.slow
def test_batches_respect_the_size_and_token_limits(tiny_model_dir: Path) -> None:
    by_size = make(tiny_model_dir, batch_size=2)
    prompts = PROMPTS + PROMPTS

    async def main() -> None:
        await all_at_once(by_size, prompts)
        await by_size.aclose()

    run(main())
    sizes = iface_slot_batches(tiny_model_dir)
    assert max(sizes) == 2 and sum(sizes) == len(prompts)

    # the shortest row costs more than 20 tokens (templated prompt + 16 new): 40 tokens fit one row at a time
    by_tokens = make(tiny_model_dir, batch_tokens=40)

    async def again() -> list[GenerateResult]:
        out = await all_at_once(by_tokens, prompts)
        await by_tokens.aclose()
        return out

    results = run(again())
    assert max(iface_slot_batches(tiny_model_dir)) == 1 and len(results) == len(prompts)


@pytest.mark.slow
def test_calls_with_different_sampling_never_share_a_batch(tiny_model_dir: Path) -> None:
    iface = make(tiny_model_dir)

    async def main() -> list[GenerateResult]:
        greedy = [iface.generate(ask(iface, p)) for p in PROMPTS[:3]]
        warm = [iface.generate(ask(iface, p, temperature=0.9, seed=3)) for p in PROMPTS[:3]]
        out = await asyncio.gather(*greedy, *warm)
        solo = await one_at_a_time(iface, PROMPTS[:3])
        await iface.aclose()
        return [*out, *solo]

    results = run(main())
    sizes = iface_slot_batches(tiny_model_dir)
    assert sum(sizes[:-3]) == 6 and max(sizes) <= 3
    assert [r.text for r in results[:3]] == [r.text for r in results[6:]]  # greedy rows unaffected by warm ones


@pytest.mark.slow
def test_seed_makes_sampling_repeatable(tiny_model_dir: Path) -> None:
    iface = make(tiny_model_dir, temperature=1.0, max_tokens=24)

    async def main() -> list[str]:
        texts = []
        for seed in (11, 11, 12):
            texts.append((await iface.generate(ask(iface, "Hello", seed=seed))).text)
        await iface.aclose()
        return texts

    first, again, other = run(main())
    assert first == again
    assert first != other


def test_device_auto_without_gpu_stops_before_any_work_with_one_line() -> None:
    with pytest.raises(DeviceUnavailableError) as info:
        HuggingFaceInterface(ModelConfig("qwen", "huggingface", parameters={"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
    message = str(info.value)
    assert "\n" not in message
    assert "device: auto needs a GPU" in message and "set parameters.device: cpu" in message
    assert not info.value.retryable


def test_coeval_run_with_device_auto_and_no_gpu_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "local.yaml"
    config.write_text(
        "models:\n"
        "  - name: qwen\n"
        "    interface: huggingface\n"
        "    parameters: {model: Qwen/Qwen2.5-1.5B-Instruct, device: auto}\n"
        "    roles: [teacher, student, judge]\n"
        "tasks:\n"
        "  - name: t\n"
        "    description: Answer a question.\n"
        "    output_description: One sentence.\n"
        "    target_attributes: {topic: [a, b]}\n"
        "    sampling: {target: [1, 1], nuance: [0, 0], total: 2}\n"
        "    rubric: {correct: The answer is right.}\n"
        "experiment:\n"
        f"  id: no-gpu\n  storage_folder: {tmp_path / 'runs'}\n"
    )
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "device" in line]
    assert len(lines) == 1 and "'qwen'" in lines[0] and "set parameters.device: cpu" in lines[0], done.stderr


def test_device_auto_is_checked_again_by_torch_when_the_model_loads(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a driver file may exist while torch cannot use the GPU: the load-time check must catch it
    monkeypatch.setattr(_devices, "gpu_may_be_present", lambda: True)
    iface = make(tiny_model_dir, device="auto")

    async def main() -> None:
        try:
            await iface.generate(ask(iface, "Hello"))
        finally:
            await iface.aclose()

    with pytest.raises(FatalModelError) as info:
        run(main())
    assert "\n" not in str(info.value) and "device: cpu" in str(info.value)


def test_explicit_cpu_device_runs_with_the_threads_asked_for(tiny_model_dir: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import torch

    asked: list[tuple[int, str]] = []
    real = torch.set_num_threads

    def spy(n: int) -> None:
        asked.append((n, threading.current_thread().name))
        real(n)

    monkeypatch.setattr(torch, "set_num_threads", spy)
    iface = make(tiny_model_dir, device="cpu", dtype="float32", threads=1)

    async def main() -> GenerateResult:
        out = await iface.generate(ask(iface, "Hello"))
        await iface.aclose()
        return out

    assert run(main()).usage.output_tokens > 0
    assert asked == [(1, "coeval-local-models")]  # set where generation runs (OpenMP's setting is per thread)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"device": "gpu"}, "parameters.device"),
        ({"dtype": "int3"}, "parameters.dtype"),
        ({"load_in_4bit": True, "load_in_8bit": True}, "load_in_4bit and load_in_8bit"),
        ({"temperature": "hot"}, "parameters.temperature"),
        ({"max_new_tokens": 0}, "parameters.max_new_tokens"),
        ({"batch_size": 0}, "parameters.batch_size"),
        ({"model": "./no/such/folder"}, "no model folder"),
        ({"model": None}, "parameters.model"),
        ({"load_in_4bit": True, "device": "cpu"}, "load_in_4bit needs"),
    ],
)
def test_bad_parameters_are_named_before_loading(tiny_model_dir: Path, params: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ParameterError) as info:
        make(tiny_model_dir, **params)
    assert fragment in str(info.value)


def test_bad_role_parameters_are_named_too(tiny_model_dir: Path) -> None:
    config = ModelConfig("tiny", "huggingface", parameters={"model": str(tiny_model_dir), "device": "cpu"},
                         role_parameters={"judge": {"temperature": -1}})
    with pytest.raises(ParameterError, match=r"role_parameters\.judge: parameters\.temperature"):
        HuggingFaceInterface(config)


def test_hub_id_loads_from_the_cache_that_hf_home_names(tiny_model_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hf" / "hub" / "models--acme--tiny-chat" / "snapshots" / ("a" * 40)
    shutil.copytree(tiny_model_dir, snapshot)
    refs = snapshot.parent.parent / "refs"
    refs.mkdir()
    (refs / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    iface = make("acme/tiny-chat")

    async def main() -> GenerateResult:
        out = await iface.generate(ask(iface, "Hello"))
        await iface.aclose()
        return out

    assert run(main()).usage.output_tokens > 0
    assert run(iface.list_models()) == ["acme/tiny-chat"]  # what `coeval models` shows: loads offline


def test_hub_id_missing_from_cache_while_offline_is_a_clear_fatal_error(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    iface = make("acme/not-downloaded")

    async def main() -> None:
        try:
            await iface.generate(ask(iface, "Hello"))
        finally:
            await iface.aclose()

    with pytest.raises(FatalModelError, match=r"not in .*empty.*offline"):
        run(main())


@pytest.mark.slow
def test_one_model_resident_at_a_time(tiny_model_dir: Path, tiny_model_no_template_dir: Path) -> None:
    first, twin, second = make(tiny_model_dir), make(tiny_model_dir, name="twin"), make(tiny_model_no_template_dir)
    host = get_host()

    async def main() -> list[str | None]:
        seen = []
        await first.generate(ask(first, "Hello"))
        await twin.generate(ask(twin, "Hello", temperature=0.5))  # same weights, other sampling: no reload
        seen.append(host.resident_key)
        assert first._slot is twin._slot and first._slot is not None and first._slot.loads == 1
        await second.generate(ask(second, "Hello"))
        seen.append(host.resident_key)
        await first.generate(ask(first, "Hello"))
        assert first._slot.loads == 2  # it was unloaded when the other model came in
        for iface in (first, twin, second):
            await iface.aclose()
        return seen

    seen = run(main())
    assert seen[0] is not None and str(tiny_model_dir) in seen[0]
    assert seen[1] is not None and str(tiny_model_no_template_dir) in seen[1]


def test_prompt_longer_than_the_context_fails_that_call_only(tmp_path: Path) -> None:
    from tests.hf.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path / "short-context", context=32)
    iface = make(folder, max_tokens=4)

    async def main() -> list[Any]:
        out = await asyncio.gather(iface.generate(ask(iface, "Hello")),
                                   iface.generate(ask(iface, "The quick brown fox jumps over the lazy dog " * 8)),
                                   return_exceptions=True)
        await iface.aclose()
        return out

    short, long = run(main())
    assert isinstance(short, GenerateResult)
    assert isinstance(long, FatalModelError) and "context is 32" in str(long)


def test_interfaces_register_without_importing_torch_or_llama_cpp() -> None:
    code = (
        "import sys\n"
        "from coeval.plugins.manager import registries\n"
        "from coeval.config.model import ModelConfig\n"
        "r = registries().interfaces\n"
        "assert 'huggingface' in r and 'llamacpp' in r, r.names()\n"
        "r.get('llamacpp')(ModelConfig('s', 'llamacpp', parameters={'model': 'smollm2-135m'}))\n"
        "r.get('huggingface')(ModelConfig('h', 'huggingface', parameters={'model': 'x/y', 'device': 'cpu'}))\n"
        "heavy = [m for m in ('torch', 'transformers', 'xllamacpp') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
