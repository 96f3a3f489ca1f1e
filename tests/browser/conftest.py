"""JupyterLab on 127.0.0.1 and Debian's Chromium driven by Playwright, for tests/browser/.

One JupyterLab server and one browser serve every test of the folder (they
are one xdist group, so they run on one worker). The notebooks run from a
copy in a temporary folder, so the committed files are never touched.
Nothing is downloaded: Playwright launches ``/usr/bin/chromium`` (or
``TNSAI_CHROMIUM``), never a browser of its own; Chromium runs with its
network features off; JupyterLab's news and update checks are off.

A missing Chromium or Playwright fails the tests with what to install: a
browser test that skips itself would hide that nothing was checked.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.llm.fake_server import free_port

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
#: Screenshots of every run (git-ignored); curated copies are committed in docs/figures/.
ARTIFACTS = ROOT / "browser-artifacts"
CHROMIUM = Path(os.environ.get("TNSAI_CHROMIUM", "/usr/bin/chromium"))
# The flags that let Chromium run here as root with no network beyond loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# User settings of the JupyterLab under test: every cell in the DOM (4.x renders
# only the visible ones by default), no news or update checks (no network).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "checkForUpdates": False,
        "fetchNews": "false",
    },
}


def require_chromium() -> Path:
    """The Chromium binary, or a test failure that says how to install it."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: the browser test needs Debian's chromium "
            "package (`apt-get install chromium`, which .ci/run does as root) or "
            "TNSAI_CHROMIUM naming a Chromium binary",
            pytrace=False,
        )
    return CHROMIUM


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it is and the folder it serves."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        # A fresh workspace per notebook: no tab of an earlier test is restored.
        workspace = Path(name).stem.replace("_", "-")
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab serving a copy of notebooks/, with the project's Python as its kernel."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns("reports", ".ipynb_checkpoints"))
    settings = base / "settings"
    for name, values in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    token = secrets.token_hex(16)
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "TNSAI_NOTEBOOK_RECORD": "replay",
    }
    log = (base / "lab.log").open("w")
    # The kernel JupyterLab starts ("python3") is this interpreter's ipykernel:
    # the project's venv, with tnsai_eval installed.
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",  # CI runs as root; harmless otherwise
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited ({server.returncode}):\n{_tail(base / 'lab.log')}")
            try:
                if httpx.get(f"{url}/api/status?token={token}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer in 90 s:\n{_tail(base / 'lab.log')}")
            time.sleep(0.3)
        yield Lab(url, token, root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium under Playwright (a fresh profile per launch)."""
    executable = require_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "playwright is not installed: install the project's browser extra "
            "(`pip install -e '.[browser]'`; `make test` does)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        # executable_path: Playwright's own browser download is never used.
        chromium = playwright.chromium.launch(
            executable_path=str(executable), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    """A new page; requests beyond the lab's own address are refused, not waited for."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(("http://127.0.0.1", "file://", "data:", "blob:"))
            else route.abort()
        ),
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
