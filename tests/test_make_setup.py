"""`make test` on a machine without Chromium: install it, or stop first with the command.

The Makefile and `.ci/chromium` are copied into a temporary folder and run by the real
`make`, with a PATH of stand-ins: `id` says who we are, `apt-get` logs what it was
asked (and, in one case, "installs" Chromium). Nothing here touches the real system.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stage(tmp_path: Path, *, uid: int, apt_get: str | None) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", repo / "Makefile")
    shutil.copy(ROOT / ".ci" / "chromium", repo / ".ci" / "chromium")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "id").chmod(0o755)
    if apt_get is not None:
        (bin_dir / "apt-get").write_text("#!/bin/sh\n" + apt_get)
        (bin_dir / "apt-get").chmod(0o755)
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "TNSAI_CHROMIUM": str(tmp_path / "chromium"),
        "APT_LOG": str(tmp_path / "apt.log"),
    }
    return repo, env


def _make_test(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    assert make is not None, "these tests run the real make"
    return subprocess.run(
        [make, "-C", str(repo), "test"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


LOGGING_APT = 'echo "$@" >> "$APT_LOG"\n'


def test_without_root_make_test_stops_before_the_venv_with_the_one_command(
    tmp_path: Path,
) -> None:
    repo, env = _stage(tmp_path, uid=1000, apt_get=LOGGING_APT)
    done = _make_test(repo, env)
    assert done.returncode != 0
    assert "Run this once, then make test again: sudo apt-get install chromium" in done.stderr
    # It stopped first: no environment was built, nothing was installed.
    assert not (repo / ".venv").exists()
    assert not (tmp_path / "apt.log").exists()


def test_without_apt_get_it_names_the_variable_to_set(tmp_path: Path) -> None:
    repo, env = _stage(tmp_path, uid=1000, apt_get=None)
    done = _make_test(repo, env)
    assert done.returncode != 0
    assert "set TNSAI_CHROMIUM to its path" in done.stderr
    assert not (repo / ".venv").exists()


def test_as_root_it_installs_debians_chromium_and_goes_on(tmp_path: Path) -> None:
    installs = LOGGING_APT + (
        'case "$*" in *install*) printf "#!/bin/sh\\n" > "$TNSAI_CHROMIUM"; '
        '/bin/chmod +x "$TNSAI_CHROMIUM";; esac\n'
    )
    repo, env = _stage(tmp_path, uid=0, apt_get=installs)
    done = subprocess.run(
        ["sh", ".ci/chromium"], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq",
        "install -y -qq chromium",
    ]


@pytest.mark.parametrize(
    ("apt_get", "says"),
    [
        (LOGGING_APT, "still missing: fix or unset TNSAI_CHROMIUM"),
        (LOGGING_APT + "exit 100\n", "'apt-get install chromium' failed"),
    ],
)
def test_as_root_a_failed_install_stops_make_test(tmp_path: Path, apt_get: str, says: str) -> None:
    repo, env = _stage(tmp_path, uid=0, apt_get=apt_get)
    done = _make_test(repo, env)
    assert done.returncode != 0
    assert says in done.stderr
    assert not (repo / ".venv").exists()


def test_present_chromium_is_left_alone(tmp_path: Path) -> None:
    repo, env = _stage(tmp_path, uid=0, apt_get=LOGGING_APT)
    chromium = Path(env["TNSAI_CHROMIUM"])
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    done = subprocess.run(
        ["sh", ".ci/chromium"], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "apt.log").exists()
    assert os.access(chromium, os.X_OK)
