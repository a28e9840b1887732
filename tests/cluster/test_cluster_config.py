"""``parameters.cluster`` is checked before anything runs (rule V-55): exit 2, the file, the
field and the rule; without Ray, the install hint."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli


def config(tmp_path: Path, cluster: Any, interface: str = "llamacpp") -> Path:
    params: dict[str, Any] = {"model": "smollm2-135m", "cluster": cluster}
    if interface == "huggingface":
        params = {"model": "some/model", "device": "cpu", "cluster": cluster}
    raw = {
        "models": [{"name": "smol", "interface": interface, "parameters": params, "roles": ["teacher", "student", "judge"]}],
        "tasks": [{"name": "t", "description": "d", "output_description": "o",
                   "target_attributes": {"a": ["x"]}, "nuanced_attributes": {"b": ["y"]},
                   "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 1},
                   "rubric": {"good": "is good"}}],
        "experiment": {"id": "c1", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def dry_run(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", "--config", str(path), "--dry-run"])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("cluster", "interface", "field", "words"),
    [
        ({"address": "10.0.0.1:6379"}, "llamacpp", "cluster.address", "auto or ray://host:port"),
        ({"replicas": 0}, "llamacpp", "cluster.replicas", "integer >= 1"),
        ({"replicas": 2, "min_replicas": 1, "max_replicas": 3}, "llamacpp", "cluster.replicas", "not both"),
        ({"min_replicas": 3, "max_replicas": 2}, "llamacpp", "cluster.min_replicas", "more than max_replicas"),
        ({"min_replicas": 1}, "llamacpp", "cluster.max_replicas", "go together"),
        ({"num_cpus": -1}, "llamacpp", "cluster.num_cpus", "number >= 0"),
        ({"engine": "transformers"}, "llamacpp", "cluster.engine", "runs on engine llamacpp"),
        ({"engine": "tensorrt"}, "huggingface", "cluster.engine", "one of transformers, vllm, llamacpp"),
        ({"engine": "vllm"}, "huggingface", "cluster.engine", "vllm is not supported in cluster serving yet"),
        ({"keep_serving": "yes"}, "llamacpp", "cluster.keep_serving", "true or false"),
        ({"replica": 2}, "llamacpp", "cluster.replica", "unknown key 'replica'"),
        ("two", "llamacpp", "parameters.cluster", "must be a mapping"),
    ],
)
def test_a_bad_cluster_block_stops_the_run_with_the_field_and_the_rule(
    tmp_path: Path, cluster: Any, interface: str, field: str, words: str
) -> None:
    code, out = dry_run(config(tmp_path, cluster, interface))
    assert code == 2, out
    line = next(line for line in out.splitlines() if "V-55" in line)
    assert "cluster.yaml" in line and field in line and words in line, out
    assert "Traceback" not in out


def test_a_good_cluster_block_passes_validation(tmp_path: Path) -> None:
    code, out = dry_run(config(tmp_path, {"address": "auto", "replicas": 2, "num_cpus": 0.5, "keep_serving": True}))
    assert "V-55" not in out and code == 0, out


def test_without_ray_a_cluster_block_fails_with_the_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees where Ray is not installed
    code, out = dry_run(config(tmp_path, {"replicas": 2}))
    assert code == 2, out
    assert "V-55" in out and "needs Ray, which is not installed" in out
    assert "pip install 'coeval-hf[ray]'" in out and "Traceback" not in out


def test_without_ray_coeval_serve_stops_with_the_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(cli, ["serve", "--config", str(config(tmp_path, {"replicas": 2}))])
    assert result.exit_code == 2, result.output
    assert "coeval serve needs Ray" in result.output and "pip install 'coeval-hf[ray]'" in result.output


def test_coeval_serve_says_when_a_config_has_nothing_to_serve(tmp_path: Path) -> None:
    path = config(tmp_path, {"replicas": 2})
    raw = yaml.safe_load(path.read_text())
    del raw["models"][0]["parameters"]["cluster"]
    path.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(cli, ["serve", str(path)])
    assert result.exit_code == 2, result.output
    assert "no model has parameters.cluster" in result.output
