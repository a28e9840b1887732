"""Named benchmarks from the Hugging Face hub, when ``--data-dir`` has no file for them.

The hub publishes each dataset's splits as files (Parquet, or JSON Lines), e.g.
``openai/gsm8k``: ``main/test-00000-of-00001.parquet``. :func:`hub_source` lists the
dataset's files, picks the split's (in the adapter's ``hub_config`` folder when the dataset
has several configurations), and downloads them with ``huggingface_hub`` into its cache
(``HF_HUB_CACHE``, else ``HF_HOME/hub``: where ``datasets`` keeps its downloads too), so a
second ingest reads them from disk. ``HF_ENDPOINT`` points it at a mirror.

Offline (``coeval ingest --offline``, or ``HF_HUB_OFFLINE=1``) nothing is downloaded:
files cached by an earlier ingest are read, and a split that is not cached is an error that
says so. A hub that cannot be reached is an error too, naming the endpoint; either way the
user can still put the files under ``--data-dir`` instead.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from coeval_benchmarks.base import BenchmarkAdapter

__all__ = ["DEFAULT_ENDPOINT", "HubError", "choose_split_files", "hub_source", "offline_by_env"]

DEFAULT_ENDPOINT = "https://huggingface.co"
#: The file types the hub publishes splits as, in the order they are preferred.
HUB_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz")
_CONNECT_TIMEOUT_S = 10.0


class HubError(ValueError):
    """The split cannot be had from the hub (offline and not cached, unreachable, absent)."""


def offline_by_env() -> bool:
    """``HF_HUB_OFFLINE`` (or ``HF_DATASETS_OFFLINE``) set to a true value."""
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _cache_dir() -> str | None:
    """Read at call time (``huggingface_hub`` reads its environment once, at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def _suffix(name: str) -> str | None:
    return next((s for s in sorted(HUB_SUFFIXES, key=len, reverse=True) if name.endswith(s)), None)


def choose_split_files(names: Sequence[str], split: str, config: str | None) -> list[str]:
    """The repository files that hold ``split``: ``[CONFIG/]SPLIT[-NNNNN-of-NNNNN].<ext>`` or
    ``[CONFIG/]SPLIT/<any>.<ext>``, in the adapter's configuration when there are several."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        suffix = _suffix(name)
        if suffix is None:
            continue
        path = PurePosixPath(name)
        stem = path.name[: -len(suffix)]
        if stem == split or stem.startswith(f"{split}-") or stem.startswith(f"{split}."):
            folder = str(path.parent)
        elif path.parent.name == split:
            folder = str(path.parent.parent)
        else:
            continue
        groups.setdefault((folder, suffix), []).append(name)
    if not groups:
        return []
    folders = {folder for folder, _ in groups}
    if config is not None and any(config in PurePosixPath(f).parts for f in folders):
        folders = {f for f in folders if config in PurePosixPath(f).parts}
    elif len(folders) > 1:
        plain = {f for f in folders if f in (".", "data")}
        if len(plain) != 1:
            raise HubError(f"split {split!r} is published in several configurations "
                           f"({', '.join(sorted(folders))}); put the one you want under --data-dir")
        folders = plain
    folder = sorted(folders)[0]
    suffix = min((s for f, s in groups if f == folder), key=HUB_SUFFIXES.index)
    return sorted(groups[(folder, suffix)])


def hub_source(adapter: BenchmarkAdapter, split: str, *, offline: bool = False) -> tuple[tuple[Path, ...], str]:
    """Local paths of the split's files (downloaded, or from the cache) and their names in
    the repository. Raises HubError with the reason."""
    try:
        import huggingface_hub  # noqa: F401 - lazy: only a benchmark missing from --data-dir needs it
    except ImportError:
        raise HubError("downloading it needs the huggingface_hub package (`pip install huggingface_hub`)") from None
    config = getattr(adapter, "hub_config", None)
    if offline or offline_by_env():
        return _from_cache(adapter.hub_id, split, config)
    return _download(adapter.hub_id, split, config)


def _unreachable(endpoint: str) -> str | None:
    """Why a TCP connection to the endpoint fails at once (no route, refused, no DNS), or None.
    ``huggingface_hub`` retries such failures for about 20 s; this answers in one try. Skipped
    behind a proxy, where only the proxy is reached directly."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")):
        return None
    url = urlsplit(endpoint)
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        with socket.create_connection((url.hostname or "", port), timeout=_CONNECT_TIMEOUT_S):
            return None
    except (OSError, ValueError) as exc:
        return _reason(exc)


def _download(repo_id: str, split: str, config: str | None) -> tuple[tuple[Path, ...], str]:
    from huggingface_hub import HfApi, hf_hub_download

    endpoint = _endpoint()
    why = _unreachable(endpoint)
    if why is not None:
        raise HubError(f"could not download {repo_id} from the Hugging Face hub at {endpoint} ({why})")
    try:
        names = HfApi(endpoint=endpoint).list_repo_files(repo_id, repo_type="dataset")
        chosen = choose_split_files(names, split, config)
        if not chosen:
            raise HubError(f"{repo_id} on the hub has no file for split {split!r}")
        paths = tuple(Path(hf_hub_download(repo_id, name, repo_type="dataset", endpoint=endpoint,
                                           cache_dir=_cache_dir())) for name in chosen)
    except HubError:
        raise
    except Exception as exc:  # connection refused, DNS, HTTP errors: each library version words them its way
        raise HubError(f"could not download {repo_id} from the Hugging Face hub at {endpoint} ({_reason(exc)})") from None
    return paths, ", ".join(chosen)


def _from_cache(repo_id: str, split: str, config: str | None) -> tuple[tuple[Path, ...], str]:
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo_id, repo_type="dataset", cache_dir=_cache_dir(), local_files_only=True))
    except Exception:
        folder = None
    names = sorted(str(p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file()) if folder else []
    chosen = choose_split_files(names, split, config)
    if folder is None or not chosen:
        raise HubError(f"offline: downloading {repo_id} from the Hugging Face hub is not allowed, and the hub "
                       "cache holds no copy of it (run once without --offline or HF_HUB_OFFLINE to cache it)")
    return tuple(folder / name for name in chosen), ", ".join(chosen)


def _reason(exc: Any) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
