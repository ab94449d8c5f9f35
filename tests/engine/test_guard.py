"""The engine is a plain library: importing and using it never pulls in Django or Celery."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "celery")

PROBE = """
import json, sys
import dedup.engine
{use}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {forbidden!r})))
"""


def _modules_loaded(use: str, stubs: Path) -> list[str]:
    """Run a clean interpreter that imports the engine; return the forbidden modules it loaded."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(stubs)])}
    code = PROBE.format(use=use, forbidden=FORBIDDEN)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def stubs(tmp_path):
    """Importable stand-ins for django and celery, so an import would succeed and be seen
    even where the real packages are not installed."""
    for name in FORBIDDEN:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    return tmp_path


def test_stub_packages_are_seen_when_imported(stubs):
    # The probe itself must be able to notice an import, or the guards below prove nothing.
    assert _modules_loaded("import django, celery", stubs) == ["celery", "django"]


def test_importing_engine_loads_no_django_or_celery(stubs):
    assert _modules_loaded("", stubs) == []


def test_fingerprinting_loads_no_django_or_celery(stubs):
    use = (
        "from dedup.engine import Fingerprinter, Config\n"
        "Fingerprinter().fingerprint('<p>新华社北京1月1日电 國家主席發表新年講話。</p>')\n"
        "Fingerprinter(Config(tokenizer='jieba')).fingerprint('国家主席发表新年讲话')"
    )
    assert _modules_loaded(use, stubs) == []
