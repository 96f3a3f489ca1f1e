"""``tnsai-eval store migrate DIR``: a store of one file per reply becomes format 3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tnsai_eval.cli import main
from tnsai_eval.llm import CachedLLM, ResponseStore, StoredRequest
from tnsai_eval.testing import ScriptedLLM


def _old_reply(root: Path, prompt: str, text: str) -> Path:
    request = StoredRequest.build("m", prompt)
    key = request.format2_key
    file = root / key[:2] / f"{key}.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "format": 2,
        "key": key,
        "request": request.to_dict(),
        "response": {"text": text, "model": "m", "usage": {}},
    }
    file.write_text(json.dumps(entry))
    return file


def test_migrate_moves_every_reply_into_one_cassette(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(12):
        _old_reply(tmp_path, f"question {i}", f"answer {i}")
    assert main(["store", "migrate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"moved 12 replies into {tmp_path / 'default.json'} (format 3)" in out
    assert [p.name for p in tmp_path.iterdir()] == ["default.json"]
    replay = CachedLLM(ScriptedLLM(model="m"), tmp_path, "replay", cassette="any::test")
    assert [replay.chat(f"question {i}").text for i in range(12)] == [
        f"answer {i}" for i in range(12)
    ]

    assert main(["store", "migrate", str(tmp_path)]) == 0
    assert "nothing to migrate" in capsys.readouterr().out


def test_migrate_into_a_named_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _old_reply(tmp_path, "hi", "hello")
    assert main(["store", "migrate", str(tmp_path), "--cassette", "01_quickstart"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["01_quickstart.json"]
    store = ResponseStore(tmp_path)
    assert store.cassettes() == ["01_quickstart"]


def test_a_missing_directory_or_a_broken_file_is_exit_2_and_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "migrate", str(tmp_path / "absent")]) == 2
    assert "does not exist" in capsys.readouterr().err
    good = _old_reply(tmp_path, "a", "fine")
    bad = _old_reply(tmp_path, "b", "fine")
    bad.write_text("{not json")
    assert main(["store", "migrate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "not valid JSON" in err
    assert good.exists()
    assert bad.exists()
    assert not (tmp_path / "default.json").exists()


def test_store_help_loads_no_client() -> None:
    probe = (
        "import sys\nfrom tnsai_eval.cli import main\n"
        "try:\n    main(['store', 'migrate', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "DIR" in done.stdout or "directory" in done.stdout
    loaded = set(done.stderr.split())
    assert "tnsai_eval.cli._store" in loaded
    assert not {"httpx", "tnsai_eval.llm", "tqdm"} & loaded
