"""The time estimate of llama.cpp models: calls run one at a time (they are added up, not
overlapped), each taking the engine's measured time per prompt token it reads (what its
last prompt does not share) and per reply token it writes."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import yaml
from coeval.config.model import Config, ModelConfig
from coeval.contract.types import TokenSeconds
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.planning.cost import estimate_cost
from coeval.planning.cost.estimate import _LOCAL_CALL_S, _PHASE_START_S
from coeval.planning.cost.prompt_reads import read_share
from coeval.planning.cost.requests import RequestBuilder
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries
from coeval_hf import llamacpp_speed
from coeval_hf.embedded import embedded_model_path
from coeval_hf.llamacpp import LlamaCppEngine, LlamaCppInterface, build_chat_payload
from coeval_hf.llamacpp_speed import SECONDS_PER_TOKEN_GB_THREAD, seconds_per_token

ROOT = Path(__file__).resolve().parents[2]


def _quickstart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    raw = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8"))
    raw["tasks"] = raw["tasks"][:1]  # the teacher-written task; the data-file task makes no teacher or judge call
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    return load_config("exp.yaml")


@pytest.mark.slow
def test_llamacpp_measures_its_speed_once_per_file_and_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = registries().interface_facts("llamacpp")
    assert facts is not None and facts.one_at_a_time and facts.seconds_per_token is seconds_per_token
    monkeypatch.setattr(llamacpp_speed, "_measured", {})
    measured: list[int] = []
    real = llamacpp_speed.measure

    def counting(path: Path, **kw: object) -> TokenSeconds | None:
        measured.append(int(kw["threads"]))  # type: ignore[call-overload]
        return real(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(llamacpp_speed, "measure", counting)
    one = ModelConfig("a", "llamacpp", parameters={"model": "smollm2-135m", "threads": 1, "temperature": 0.0})
    same_file = ModelConfig("b", "llamacpp", parameters={"model": "smollm2-135m", "threads": 1, "temperature": 1.0})
    speed = seconds_per_token(one)
    assert isinstance(speed, TokenSeconds)
    # llama.cpp's own timings: a 135M model reads and writes a token in well under a second
    assert 0 < speed.prompt < 0.5 and 0 < speed.reply < 0.5
    assert speed.structured is not None and 0 < speed.structured < 0.5
    again = seconds_per_token(same_file)  # the same file and threads: measured once, one engine
    assert isinstance(again, TokenSeconds) and again == speed and measured == [1]
    assert speed.engine == LlamaCppInterface(one).slot_key
    seconds_per_token(ModelConfig("c", "llamacpp", parameters={"model": "smollm2-135m", "threads": 2}))
    assert measured == [1, 2]


def test_where_the_file_cannot_run_or_is_not_here_the_file_size_guess_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(llamacpp_speed, "_measured", {})
    monkeypatch.setattr(llamacpp_speed, "measure", lambda path, **kw: None)
    size_gb = embedded_model_path("smollm2-135m").stat().st_size / 1e9
    guess = SECONDS_PER_TOKEN_GB_THREAD * size_gb / 2
    model = ModelConfig("m", "llamacpp", parameters={"model": "smollm2-135m", "threads": 2})
    speed = seconds_per_token(model)
    assert isinstance(speed, TokenSeconds)
    assert (speed.prompt, speed.reply, speed.structured) == (pytest.approx(guess), pytest.approx(guess), None)
    # served on a cluster: not this machine's speed to measure
    clustered = ModelConfig("m", "llamacpp", parameters={"model": "smollm2-135m", "threads": 2,
                                                         "cluster": {"replicas": 2}})
    assert seconds_per_token(clustered) == pytest.approx(guess)
    assert seconds_per_token(ModelConfig("m", "llamacpp", parameters={"model": "/no/such.gguf"})) is None


def test_a_broken_file_is_not_measured_but_guessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp_speed, "_measured", {})
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 4096)
    speed = seconds_per_token(ModelConfig("m", "llamacpp", parameters={"model": str(broken), "threads": 1}))
    guess = SECONDS_PER_TOKEN_GB_THREAD * broken.stat().st_size / 1e9
    assert isinstance(speed, TokenSeconds) and speed.prompt == pytest.approx(guess) and speed.structured is None


def test_the_quickstart_estimate_adds_up_its_local_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    speed = TokenSeconds(prompt=0.006, reply=0.011, structured=0.014)
    monkeypatch.setattr(llamacpp_speed, "_measured", {})
    monkeypatch.setattr(llamacpp_speed, "measure", lambda path, **kw: speed)
    config = _quickstart(tmp_path, monkeypatch)
    regs = registries()
    estimate = estimate_cost(config, samples=0, registries=regs)
    builder = RequestBuilder(config, registries=regs)
    task, models = config.tasks[0], {m.name: m for m in config.models}
    # the three models load one file with the same threads: one engine, one prompt cache
    same_engine = {DATA_GENERATION: 2, RESPONSE_COLLECTION: 3, EVALUATION: 2}
    for phase, seconds in estimate.phase_seconds.items():
        cells = [c for c in estimate.cells if c.phase == phase and c.calls]
        for c in cells:  # each call: the engine's own cost, the prompt it reads and its reply
            share = read_share(builder, phase, task, models[c.model], builder.default_texts(task), students=3,
                               same_engine=same_engine[phase])
            reply = speed.reply if phase == RESPONSE_COLLECTION else speed.structured  # teachers, judges: a schema
            assert reply is not None
            assert c.seconds == pytest.approx(c.calls * _LOCAL_CALL_S + speed.prompt * share * c.input_tokens
                                              + reply * c.output_tokens)
        expected = _PHASE_START_S + sum(c.seconds for c in cells) if cells else 0.0
        assert seconds == pytest.approx(expected), phase  # one at a time: the calls add up
    assert estimate.phase_seconds["evaluation"] > 0


@pytest.mark.slow
def test_the_quickstart_plans_its_answers_at_the_length_its_task_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"one or two sentences": 27 words, 40 tokens an answer (not the students' max_tokens
    of 80); a datapoint is its question, that answer and the JSON around them."""
    config = _quickstart(tmp_path, monkeypatch)
    estimate = estimate_cost(config, samples=0, registries=registries())
    per_call = {(c.phase, c.model): c.output_tokens / c.calls for c in estimate.cells if c.calls}
    assert per_call[(RESPONSE_COLLECTION, "smollm2-greedy")] == pytest.approx(27 * 1.33 + 4)
    assert per_call[(DATA_GENERATION, "smollm2-greedy")] == pytest.approx((27 * 1.33 + 4) * 1.5 + 12)


@pytest.mark.slow
def test_the_read_share_follows_llama_cpps_own_prompt_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three answers to one datapoint, each graded by two judges on one engine, in the order
    the run sends them: the tokens llama.cpp reads come within 30% of the planned share."""
    config = _quickstart(tmp_path, monkeypatch)
    builder = RequestBuilder(config, registries=registries())
    task = config.tasks[0]
    judge = next(m for m in config.models if m.name == "smollm2-greedy")
    texts = builder.default_texts(task)
    answers = [texts.response, "A different answer of about the same length, written by another student here.",
               "Yet another answer: a third student wrote this one, with its own words and its own facts."]
    engine = LlamaCppEngine(embedded_model_path(), n_ctx=2048, threads=1, n_gpu_layers=0, verbose=False, label="t")
    read = sent = 0
    # a fresh start: the first prompt of the datapoint shares only the chat template with what came before
    engine.reply({"messages": [{"role": "user", "content": "Hello."}], "max_tokens": 1})
    try:
        for answer in answers:
            request = builder.requests(EVALUATION, task, judge, attrs.evolve(texts, response=answer))[0]
            for _judge in range(2):
                timings = engine.reply({**build_chat_payload(request, "t"), "max_tokens": 1})["timings"]
                read += timings["prompt_n"]
                sent += timings["prompt_n"] + timings["cache_n"]
    finally:
        engine.unload()
    planned = read_share(builder, EVALUATION, task, judge, texts, students=3, same_engine=2)
    assert planned == pytest.approx(read / sent, rel=0.3)
