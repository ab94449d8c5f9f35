"""docs/client_example.py, run as a reader of the docs would: against a live server and a
real worker, it submits a batch, waits, and reads the matches by external id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dedup.models import ApiToken, Article
from tests import roles
from tests.texts import ARTICLE, NEAR, OTHER

ROOT = Path(__file__).resolve().parents[2]


def test_client_example_submits_waits_and_reads_matches_by_external_id(
    worker, live_server, tmp_path
):
    token = ApiToken.issue(roles.user_in("editor", "cms"))[1]
    rows = [
        {"id": "cms-1", "title": "原文", "body": ARTICLE},
        {"id": "cms-2", "title": "转载", "body": NEAR},
        {"id": "cms-3", "title": "别的", "body": OTHER},
    ]
    batch = tmp_path / "articles.jsonl"
    batch.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")

    def run() -> subprocess.CompletedProcess:
        command = [
            sys.executable, str(ROOT / "docs" / "client_example.py"), str(batch),
            "--url", live_server.url, "--token", token, "--source", "日报", "--timeout", "90",
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    done = run()
    assert done.returncode == 0, done.stderr
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    matches = {p["external_id"]: [m["external_id"] for m in p["matches"]] for p in printed}
    assert matches == {"cms-1": ["cms-2"], "cms-2": ["cms-1"], "cms-3": []}
    assert "3 new" in done.stderr

    again = run()  # a re-send (after a timeout, say) stores nothing twice
    assert again.returncode == 0, again.stderr
    assert "0 new, 3 sent before" in again.stderr
    assert Article.objects.count() == 3
