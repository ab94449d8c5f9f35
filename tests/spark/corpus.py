"""A corpus with known copies for the Spark tests: near, partial and exact copies, a shared
footer (boilerplate), a story reposted thirty times (its passages held by more than
MAX_PASSAGE_OWNERS articles), integer and string ids, and a row the job must skip."""

from __future__ import annotations

import json
import random
from pathlib import Path

from bench.corpus import build_corpus
from tests.texts import reposted, stranger

FOOTER = (
    "\n\n本网站所刊登的各种新闻、信息和各种专题专栏资料，均为本网站版权所有，"
    "未经协议授权禁止下载使用。联系电话：010-12345678，电子邮件：service@example.com。"
)


def rows(per_band: int = 4, seed: int = 15) -> list[dict]:
    """Return the corpus as input rows, in a fixed shuffled order."""
    rng = random.Random(seed)
    found = [{"id": doc.id, "text": doc.text} for doc in build_corpus(per_band=per_band)]
    for i in rng.sample(range(len(found)), 10):  # exact copies: other whitespace
        text = found[i]["text"]
        found.append(
            {"id": f"{found[i]['id']}/exact", "text": "  " + text.replace("\n", " \n") + "\n"}
        )
    for i in range(25):  # strangers under one footer, some with integer ids
        ident = 9000 + i if i % 2 else f"footer-{i}"
        found.append({"id": ident, "text": stranger(1500 + i, 8) + FOOTER})
    found += [{"id": f"story-{i}", "text": text} for i, text in enumerate(reposted(30))]
    rng.shuffle(found)
    found.insert(len(found) // 2, {"id": "no-text", "fingerprint": "00000000000000ff"})
    return found


def write(path: Path, items: list[dict]) -> Path:
    """Write rows as JSON Lines; return the path."""
    with path.open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    return path
