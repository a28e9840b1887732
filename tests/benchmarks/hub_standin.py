"""A stand-in for the Hugging Face hub on 127.0.0.1: the three requests ``huggingface_hub``
makes to fetch a dataset's files (list the tree, HEAD a file for its commit/etag/size, GET it)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubStandIn:
    """Serves ``repos``: dataset id -> {path in the repository: bytes}. ``requests`` logs
    ``"METHOD path"`` of every request, for tests to check what was (not) downloaded."""

    def __init__(self, repos: Mapping[str, Mapping[str, bytes]]) -> None:
        self.repos = {repo: dict(files) for repo, files in repos.items()}
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _tree(self, repo: str) -> list[dict[str, object]]:
        files = self.repos[repo]
        folders = sorted({p.rsplit("/", 1)[0] for p in files if "/" in p})
        return [{"type": "directory", "path": f, "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0}
                for f in folders] + [
            {"type": "file", "path": p, "oid": hashlib.sha1(b).hexdigest(), "size": len(b)} for p, b in files.items()]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:
                pass

            def _answer(self, status: int, body: bytes, headers: Mapping[str, str], send_body: bool) -> None:
                self.send_response(status)
                for key, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def _route(self, send_body: bool) -> None:
                path = unquote(urlsplit(self.path).path)
                hub.requests.append(f"{self.command} {path}")
                for repo, files in hub.repos.items():
                    tree = f"/api/datasets/{repo}/tree/main"
                    resolve = f"/datasets/{repo}/resolve/main/"
                    if path == tree:
                        body = json.dumps(hub._tree(repo)).encode()
                        return self._answer(200, body, {"Content-Type": "application/json"}, send_body)
                    if path.startswith(resolve) and path[len(resolve):] in files:
                        data = files[path[len(resolve):]]
                        return self._answer(200, data, {"X-Repo-Commit": COMMIT,
                                                        "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                                                        "Content-Type": "application/octet-stream"}, send_body)
                body = json.dumps({"error": "Repository not found"}).encode()
                return self._answer(404, body, {"Content-Type": "application/json",
                                                "X-Error-Code": "RepoNotFound"}, send_body)

            def do_GET(self) -> None:
                self._route(True)

            def do_HEAD(self) -> None:
                self._route(False)

        return Handler
