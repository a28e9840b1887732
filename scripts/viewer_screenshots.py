"""Screenshots for the docs, in headless Chromium: the start, matrix (one cell expanded) and
datapoint pages of ``coeval view`` on a small run made on the mock interface and analysed
(so the start page shows its leaderboard), and the first screen of the HTML report of a
real run (the reference run beside the repository, or ``--report-run``).

    python scripts/viewer_screenshots.py            # writes docs/images/viewer-*.png, report-leaderboard.png
    python scripts/viewer_screenshots.py --out DIR  # elsewhere
    python scripts/viewer_screenshots.py --report-run runs/quickstart-v1

Needs playwright (requirements/dev.txt) and Chromium (``$CHROMIUM``, else ``chromium`` on
the PATH); no browser is downloaded and nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = ("start", "matrix", "datapoint")
#: the real run whose report is shown: ``../shared/reference-runs/medium-benchmark-v1``
REFERENCE_RUN = REPO.parent / "shared" / "reference-runs" / "medium-benchmark-v1"

CONFIG = """\
models:
  - {name: teacher, interface: mock, parameters: {seed: 1, quality: 0.9}, roles: [teacher]}
  - {name: student-strong, interface: mock, parameters: {seed: 2, quality: 0.95}, roles: [student]}
  - {name: student-mid, interface: mock, parameters: {seed: 3, quality: 0.6}, roles: [student]}
  - {name: student-weak, interface: mock, parameters: {seed: 4, quality: 0.2}, roles: [student]}
  - {name: judge-a, interface: mock, parameters: {seed: 5}, roles: [judge]}
  - {name: judge-b, interface: mock, parameters: {seed: 6, malformed_rate: 0.1}, roles: [judge]}
tasks:
  - name: qa
    description: Answer a general-knowledge question in one sentence.
    output_description: One correct, complete sentence.
    target_attributes: {topic: [history, science, geography]}
    nuanced_attributes: {phrasing: [direct, indirect]}
    sampling: {target: [1, 1], nuance: [1, 1], total: 8}
    rubric:
      correctness: "The answer is factually right."
      completeness: "The answer addresses the whole question."
    evaluation_mode: single
experiment:
  id: screenshots
  storage_folder: ./runs
  generation_retries: 0
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"coeval view exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/api/status", timeout=5) as reply:
                if b'"ready": true' in reply.read():
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("coeval view did not read the run in time")


def _shoot(url: str, out: Path, chromium: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(url + "/r/0/")
        shots.append(out / "viewer-start.png")
        page.screenshot(path=str(shots[-1]), full_page=False)
        page.goto(url + "/r/0/matrix")
        page.keyboard.press("j")
        page.keyboard.press("l")
        page.keyboard.press("Enter")
        page.locator("#matrix tr.expanded").wait_for()
        shots.append(out / "viewer-matrix.png")
        page.screenshot(path=str(shots[-1]), full_page=False)
        page.locator("#matrix a.dp-link").first.click()
        page.wait_for_load_state()
        shots.append(out / "viewer-datapoint.png")
        page.screenshot(path=str(shots[-1]), full_page=False)
        browser.close()
    return shots


def _shoot_report(run: Path, root: Path, out: Path, chromium: str) -> Path:
    """The report's first screen, as a reader opening report.html sees it."""
    from playwright.sync_api import sync_playwright

    analysis = root / "report-analysis"
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "analyze", "--run", str(run), "--out",
                           str(analysis), "-q", "--report", "html", "--report", "summary"],
                          check=False, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"coeval analyze failed: {done.stderr}")
    shot = out / "report-leaderboard.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto((analysis / "report.html").as_uri())
        page.wait_for_selector("body[data-charts-drawn]", timeout=60_000)
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    return shot


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images", help="folder for the PNG files")
    parser.add_argument("--report-run", type=Path, default=REFERENCE_RUN,
                        help="the run whose report's first screen is shown (default: the reference run)")
    args = parser.parse_args(argv)
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "exp.yaml").write_text(CONFIG, encoding="utf-8")
        env = {**os.environ, "COEVAL_VIEW_CACHE": str(root / "cache")}
        coeval = [sys.executable, "-m", "coeval.cli.main"]
        done = subprocess.run([*coeval, "run", "--config", "exp.yaml", "-q"], cwd=root, env=env, check=False,
                              capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: some judge replies failed, as intended
            raise SystemExit(f"coeval run failed: {done.stderr}")
        run = root / "runs" / "screenshots"
        done = subprocess.run([*coeval, "analyze", "--run", str(run), "-q", "--report", "summary"], cwd=root,
                              env=env, check=False, capture_output=True, text=True)  # the start page's leaderboard
        if done.returncode != 0:
            raise SystemExit(f"coeval analyze failed: {done.stderr}")
        port = _free_port()
        proc = subprocess.Popen([*coeval, "view", "--run", str(run), "--port", str(port),
                                 "--no-browser"], cwd=root, env=env, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url, proc)
            for shot in _shoot(url, args.out, chromium):
                print(shot)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        if args.report_run.is_dir():
            print(_shoot_report(args.report_run, root, args.out, chromium))
        else:
            print(f"no report screenshot: {args.report_run} is not a run folder", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
