"""Every reader of untrusted input, fed random and adversarial data: run-folder JSONL (core
and analysis), ingest files (JSONL, JSON, CSV, Parquet), judge replies and YAML.

Each case must end in a result, a clear error of the reader's own type naming the file, or
a bad-line count: never another exception, never a hang (hypothesis fails a case over 2 s).
Adversarial inputs: deep nesting, huge strings and numbers, lone surrogates, NUL and other
control characters, invalid UTF-8, unclosed structures. About 2,500 cases in all.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from coeval.config._yaml import UnreadableYaml, load_yaml_guarded
from coeval.prompts.errors import OutputParseError
from coeval.prompts.judging import parse_per_factor, parse_rationale, parse_single
from coeval.storage import iter_jsonl
from coeval_analysis.loading.jsonl import MAP, TEXT, read_records
from coeval_benchmarks.sources import DatasetFileError, read_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: one case may take at most this long (the whole module runs in well under a minute)
PER_CASE = timedelta(seconds=2)
FACTORS = ["correctness", "clarity of tone"]


def _fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=PER_CASE, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


#: inputs written to break parsers
ADVERSARIAL: list[bytes] = [
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b"[" * 30_000,
    b'{"a":' * 10_000,
    b'{"id": "' + b"x" * 300_000 + b'"}',
    b'{"id": ' + b"9" * 20_000 + b"}",
    b'{"id": 1e999999, "v": -1e999999}',
    b'{"id": NaN, "scores": Infinity}',
    b'{"id": "\\ud800", "t": "\\udfff\\ud800x"}',
    b'{"id": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8: invalid
    b'{"id": "a\x00b", "t": "\x00"}',
    b"\x00" * 1000,
    b'{"id": "\x1b]0;title\x07\x1b[2J", "t": "\x7f\x9b"}',
    b"\xff\xfe\xfd\xfc",
    b"\xef\xbb\xbf" + b'{"id": "bom"}',
    b'{"id": "x"' + b", " * 10_000,
    b"[1," * 20_000,
    b'{"id": {"id": {"id": []}}, "scores": [[[[]]]]}',
    b'"just a string"',
    b"12345",
    b"null",
    b"correctness" + b" " * 30_000 + b"x",
    b"correctness" + b":" * 30_000,
    b"```json\n" + b"{" * 20_000 + b"\n```" * 100,
    b"a: &a [1, 2]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    b"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
    b"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
    b"!!python/object/apply:os.system ['true']",
    b"a: 2001-02-30\nb: 1e99999999\n",
    b"- " * 5000 + b"x",
    b"a:\n" + b"  " * 3000 + b"b: 1\n",
    b'=HYPERLINK("x"),"+1",@a,-2\n' * 100,
    b'a,b\n"unclosed, 1\n',
    b"a,b\n1,2,3\n",
    b"PAR1" + b"\x00" * 100 + b"PAR1",
]


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.text(max_size=40))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                        max_leaves=12)


def _random_text(rng: random.Random, n: int) -> str:
    """Any code point, lone surrogates, controls and NUL included."""
    pools = [(0, 0x7F), (0x80, 0x9F), (0x100, 0xD7FF), (0xD800, 0xDFFF), (0xE000, 0x10FFFF)]
    out = []
    for _ in range(n):
        low, high = pools[rng.randrange(len(pools))] if rng.random() < 0.3 else (0x20, 0x7E)
        out.append(chr(rng.randint(low, high)))
    return "".join(out)


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([None, True, False, rng.randint(-(10**20), 10**20), rng.random() * 1e6,
                           _random_text(rng, rng.randint(0, 20))])
    if roll < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_random_text(rng, rng.randint(0, 6)): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _random_line(rng: random.Random) -> bytes:
    """One line: random bytes, random text, (cut) JSON, a record, or an adversarial input."""
    kind = rng.choice(["bytes", "text", "json", "cut", "record", "adversarial"])
    if kind == "bytes":
        return rng.randbytes(rng.randint(0, 200))
    if kind == "text":
        return _random_text(rng, rng.randint(0, 120)).encode("utf-8", "surrogatepass")
    if kind == "adversarial":
        return rng.choice(ADVERSARIAL)
    value = _random_json(rng)
    if kind == "record":
        value = {"id": _random_text(rng, 8), "scores": value, "status": rng.choice(["ok", "failed", None])}
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    return text[: rng.randint(0, len(text))] if kind == "cut" else text


def _random_file(seed: int) -> bytes:
    rng = random.Random(seed)
    return b"\n".join(_random_line(rng) for _ in range(rng.randint(0, 6)))


#: a case is a seed: the file it stands for is built with Python's random (hypothesis'
#: own generation of nested data costs ten times more and adds nothing here)
_files = st.integers(0, 2**32).map(_random_file)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="coeval-fuzz-") as folder:
        yield Path(folder)


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- run-folder JSONL


def _check_iter_jsonl(path: Path, data: bytes) -> None:
    bad: list[int] = []
    records = list(iter_jsonl(path, on_bad_line=lambda n, _t: bad.append(n)))
    assert all(isinstance(r, dict) for r in records)
    lines = [line for line in data.split(b"\n") if line.strip()]
    assert len(records) + len(bad) == len(lines)


@pytest.mark.slow
@given(data=_files)
@_fuzz(600)
def test_run_folder_jsonl_fuzz(scratch: Path, data: bytes) -> None:
    _check_iter_jsonl(_write(scratch, "x.jsonl", data), data)


@pytest.mark.parametrize("data", ADVERSARIAL)
def test_run_folder_jsonl_adversarial(tmp_path: Path, data: bytes) -> None:
    _check_iter_jsonl(_write(tmp_path, "x.jsonl", data + b"\n" + b'{"id": "fine"}\n'), data + b"\n{}")


@pytest.mark.slow
@given(data=_files)
@_fuzz(60)
def test_analysis_record_reader_fuzz(scratch: Path, data: bytes) -> None:
    path = _write(scratch, "e.jsonl", data)
    table, bad = read_records([path], {"id": TEXT, "status": TEXT, "scores": MAP})
    lines = [line for line in data.split(b"\n") if line.strip()]
    assert bad >= 0 and table.num_rows + bad <= len(lines)


# ---------------------------------------------------------------- ingest files


def _check_rows(path: Path) -> None:
    try:
        rows = list(read_rows(path))
    except DatasetFileError as exc:
        assert str(path) in str(exc)
        return
    assert all(isinstance(n, int) and isinstance(r, dict) for n, r in rows)


@pytest.mark.slow
@given(data=_files)
@_fuzz(300)
def test_ingest_jsonl_fuzz(scratch: Path, data: bytes) -> None:
    _check_rows(_write(scratch, "items.jsonl", data))


@pytest.mark.slow
@given(data=_files)
@_fuzz(150)
def test_ingest_json_fuzz(scratch: Path, data: bytes) -> None:
    _check_rows(_write(scratch, "items.json", data))


@st.composite
def _csv_files(draw: Any) -> bytes:
    cells = st.one_of(st.text(max_size=30), st.sampled_from(["=1+1", '"', '""', "\r", "\x00", "a,b", "\ud800"]))
    header = draw(st.lists(st.text(max_size=8), min_size=0, max_size=4))
    rows = draw(st.lists(st.lists(cells, max_size=5), max_size=5))
    text = "\n".join(",".join(r) for r in [header, *rows])
    tail = draw(st.one_of(st.just(b""), st.binary(max_size=40), st.sampled_from(ADVERSARIAL)))
    return bytes(text.encode("utf-8", "surrogatepass") + tail)


@pytest.mark.slow
@given(data=_csv_files())
@_fuzz(250)
def test_ingest_csv_fuzz(scratch: Path, data: bytes) -> None:
    _check_rows(_write(scratch, "items.csv", data))


@st.composite
def _parquet_files(draw: Any) -> bytes:
    if draw(st.booleans()):  # a real file with hostile values, possibly cut or corrupted
        texts = draw(st.lists(st.one_of(st.text(max_size=50), st.sampled_from(["\x00", "\u202e", "x" * 100_000])),
                              min_size=1, max_size=5))
        buf = io.BytesIO()
        pq.write_table(pa.table({"question": texts, "n": list(range(len(texts)))}), buf)
        data = buf.getvalue()
        cut = draw(st.sampled_from(["whole", "cut", "flip"]))
        if cut == "cut":
            return data[: draw(st.integers(0, len(data)))]
        if cut == "flip":
            i = draw(st.integers(0, len(data) - 1))
            return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        return data
    return b"PAR1" + bytes(draw(st.binary(max_size=200))) + b"PAR1"


@pytest.mark.slow
@given(data=_parquet_files())
@_fuzz(150)
def test_ingest_parquet_fuzz(scratch: Path, data: bytes) -> None:
    _check_rows(_write(scratch, "items.parquet", data))


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
@pytest.mark.parametrize("data", ADVERSARIAL)
def test_ingest_adversarial(tmp_path: Path, data: bytes, suffix: str) -> None:
    _check_rows(_write(tmp_path, "items" + suffix, data))


# ---------------------------------------------------------------- judge replies


def _check_reply(text: str) -> None:
    for parse in (lambda t: parse_single(t, FACTORS), lambda t: parse_per_factor(t, FACTORS[0])):
        with contextlib.suppress(OutputParseError):
            parse(text)
    assert isinstance(parse_rationale(text, FACTORS), dict)


_replies = st.one_of(
    st.text(max_size=300),
    _json_values().map(json.dumps),
    st.builds(lambda v, pre, post: f"{pre}```json\n{json.dumps(v)}\n```{post}", _json_values(), st.text(max_size=20),
              st.text(max_size=20)),
    st.sampled_from(ADVERSARIAL).map(lambda b: b.decode("utf-8", "surrogateescape")),
    _files.map(lambda b: b.decode("utf-8", "replace")),
)


@pytest.mark.slow
@given(text=_replies)
@_fuzz(500)
def test_judge_reply_fuzz(text: str) -> None:
    _check_reply(text)


@pytest.mark.parametrize("data", ADVERSARIAL)
def test_judge_reply_adversarial(data: bytes) -> None:
    _check_reply(data.decode("utf-8", "surrogateescape"))


# ---------------------------------------------------------------- YAML


def _check_yaml(text: str) -> None:
    try:
        load_yaml_guarded(text, "fuzz.yaml")
    except UnreadableYaml as exc:
        assert "fuzz.yaml" in str(exc)


_yaml_texts = st.one_of(
    st.text(max_size=300),
    _json_values().map(lambda v: yaml.safe_dump(v, allow_unicode=True)),
    st.lists(st.sampled_from(["a:", " b:", "- ", "&x ", "*x", "[", "]", "{", "}", "!!binary ", "? ", "'", '"', ":",
                              "\n", "  ", "\t", "%YAML 1.2\n", "---\n", "<<: *x\n", "2001-02-30", "0o777", "~"]),
             max_size=40).map("".join),
    st.sampled_from(ADVERSARIAL).map(lambda b: b.decode("utf-8", "replace")),
)


@pytest.mark.slow
@given(text=_yaml_texts)
@_fuzz(400)
def test_yaml_fuzz(text: str) -> None:
    _check_yaml(text)


@pytest.mark.parametrize("data", ADVERSARIAL)
def test_yaml_adversarial(data: bytes) -> None:
    _check_yaml(data.decode("utf-8", "surrogateescape"))
