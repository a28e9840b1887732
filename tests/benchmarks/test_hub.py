"""Named benchmarks missing from --data-dir come from the Hugging Face hub (a local stand-in
here, through HF_ENDPOINT), cached for the next time; --offline reads the cache only."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_benchmarks.hub import HubError, choose_split_files

from tests.benchmarks.hub_standin import HubStandIn


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out.getvalue()


def _rows(kind: str) -> list[dict[str, Any]]:
    return [{"question": f"{kind} question {i}: what is {i} + {i}?", "answer": f"{i} + {i} = {2 * i}\n#### {2 * i}"}
            for i in range(1, 4)]


GSM8K = {
    ".gitattributes": b"*.parquet filter=lfs\n",
    "README.md": b"# GSM8K\n",
    "main/train-00000-of-00001.parquet": _parquet(_rows("main")),
    "socratic/train-00000-of-00001.parquet": _parquet(_rows("socratic")),
}


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubStandIn]:
    import huggingface_hub.constants

    with HubStandIn({"openai/gsm8k": GSM8K}) as server:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        # the library reads the variable once, at import: another test may have imported it
        # while the suite's offline fixture had it set
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
        yield server


def _ingest(run: Path, tmp_path: Path, *more: str) -> Any:
    return CliRunner().invoke(cli, ["ingest", "--run", str(run), "-b", "gsm8k", "--split", "train",
                                    "--data-dir", str(tmp_path / "empty"), *more])


def _prompts(run: Path) -> list[str]:
    return [json.loads(line)["prompt"] for path in sorted((run / "phase3_datapoints").glob("gsm8k*.jsonl"))
            for line in path.read_text().splitlines()]


def test_a_benchmark_missing_from_data_dir_is_downloaded_from_the_hub_and_cached(
    hub: HubStandIn, finished_run: Path, tmp_path: Path
) -> None:
    result = _ingest(finished_run, tmp_path)
    assert result.exit_code == 0, result.output
    assert ("gsm8k: wrote 3 datapoint(s) to task gsm8k as teacher gsm8k-benchmark (0 already present; 3 of 3 "
            "items of split train from main/train-00000-of-00001.parquet of openai/gsm8k (Hugging Face hub))"
            in result.output)
    prompts = _prompts(finished_run)
    assert len(prompts) == 3 and all("main question" in p for p in prompts)  # the adapter's configuration
    assert "GET /api/datasets/openai/gsm8k/tree/main" in hub.requests
    assert "GET /datasets/openai/gsm8k/resolve/main/main/train-00000-of-00001.parquet" in hub.requests
    assert not [r for r in hub.requests if "socratic" in r or "README" in r]  # only the split's file
    cached = list((tmp_path / "hf_home" / "hub" / "datasets--openai--gsm8k").rglob("train-00000-of-00001.parquet"))
    assert cached, "downloaded into the hub cache under HF_HOME"

    asked = len(hub.requests)
    offline = _ingest(finished_run, tmp_path, "--offline")  # the cached copy; the hub is not asked
    assert offline.exit_code == 0, offline.output
    assert "gsm8k: nothing new; all 3 item(s) are already in task gsm8k" in offline.output
    assert len(hub.requests) == asked


def test_offline_with_nothing_cached_is_a_clear_error(hub: HubStandIn, finished_run: Path, tmp_path: Path) -> None:
    result = _ingest(finished_run, tmp_path, "--offline")
    assert result.exit_code == 2
    assert "no data for gsm8k split 'train'" in result.output
    assert ("offline: downloading openai/gsm8k from the Hugging Face hub is not allowed, and the hub cache holds "
            "no copy of it") in result.output
    assert "Traceback" not in result.output
    assert hub.requests == []


def test_an_unreachable_hub_is_a_clear_error(
    finished_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    result = _ingest(finished_run, tmp_path)
    assert result.exit_code == 2
    assert "no data for gsm8k split 'train'" in result.output
    assert f"could not download openai/gsm8k from the Hugging Face hub at http://127.0.0.1:{port} (" in result.output
    assert "Traceback" not in result.output


def test_split_files_are_found_in_the_layouts_the_hub_uses() -> None:
    names = ["README.md", "main/test-00000-of-00002.parquet", "main/test-00001-of-00002.parquet",
             "socratic/test-00000-of-00001.parquet", "main/train-00000-of-00001.parquet"]
    assert choose_split_files(names, "test", "main") == ["main/test-00000-of-00002.parquet",
                                                         "main/test-00001-of-00002.parquet"]
    assert choose_split_files(["data/test.jsonl", "data/test.parquet"], "test", None) == ["data/test.parquet"]
    assert choose_split_files(["plain/validation/0000.parquet"], "validation", None) == ["plain/validation/0000.parquet"]
    assert choose_split_files(["data/train-0.parquet"], "test", None) == []
    with pytest.raises(HubError, match=r"split 'test' is published in several configurations \(a, b\)"):
        choose_split_files(["a/test.parquet", "b/test.parquet"], "test", None)
