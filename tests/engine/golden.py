"""Golden outputs of the engine: what a fixed set of varied texts fingerprint and feature to.

    python -m tests.engine.golden --texts     (once: build the texts, store them)
    python -m tests.engine.golden             (store the outputs the engine gives them now)

The texts (tests/engine/data/golden_texts.jsonl.xz) come from tests/texts.py, from the bench
corpora builders at fixed seeds (Chinese news, English technical prose, Debian changelogs, mail,
Chinese reference pages, templated reports), and from hand-made edge cases (numbers-heavy,
short, HTML, Traditional, mixed scripts, binary junk, empty). They are stored, not rebuilt by
the test, because the builders read text that installed packages and the machine ship, which
another machine may hold in another version.

For each text, the outputs (tests/engine/data/golden.json) keep one short digest per field:
the fingerprint (value, status, tokens, version) of both Fingerprinter.fingerprint and
Detector.fingerprint_and_features, every field of the Features, their packed bytes, their fact
keys, the usable tokens and Detector.passages. tests/engine/test_golden.py compares the engine
with them, so that a change made for speed keeps every output the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import random
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
TEXTS = DATA / "golden_texts.jsonl.xz"
OUTPUTS = DATA / "golden.json"
FEATURE_FIELDS = (
    "fingerprint",
    "length",
    "shingles",
    "passage_of",
    "passage_keys",
    "passage_sizes",
    "units",
    "facts",
    "places",
    "number_ids",
)


def _digest(value: object) -> str:
    """Return a short digest of a value: an array's dtype, shape and bytes, or its repr."""
    hasher = hashlib.sha256()
    if isinstance(value, np.ndarray):
        hasher.update(f"{value.dtype.str}{value.shape}".encode())
        hasher.update(np.ascontiguousarray(value).tobytes())
    else:
        hasher.update(repr(value).encode("utf-8", "surrogatepass"))
    return hasher.hexdigest()[:10]


def outputs(detector, text: str) -> dict[str, str]:
    """Return a digest of each output the engine gives one text, by name (FIELDS)."""
    fp, features = detector.fingerprint_and_features(text)
    alone = detector.fingerprinter.fingerprint(text)
    found = {
        "fingerprint": _digest((alone.value, str(alone.status), alone.tokens, alone.version)),
        "detector_fingerprint": _digest((fp.value, str(fp.status), fp.tokens, fp.version)),
        "tokens": _digest(detector.fingerprinter.tokens(text)),
        "passages": _digest(detector.passages(text)),
        "packed": _digest(features.to_bytes()),
        "fact_keys": _digest(features.fact_keys),
    }
    for name in FEATURE_FIELDS:
        found[f"features.{name}"] = _digest(getattr(features, name))
    return found


def _edge_cases() -> list[tuple[str, str]]:
    """Return hand-made texts that stress the rarer paths of normalising and features."""
    numbers = (
        "2024年5月9日，上证指数收于3154.32点，涨0.52%，成交额4,321亿元。"
        "深证成指报9,876.54点，跌1.2%；创业板指报1888点。热线电话：010-12345678，"
        "工单号1Z999AA10123456784，航班CA1234于14:35起飞。\n"
        "| 城市 | 最高 | 最低 |\n| 北京 | 31 | 19 |\n| 上海 | 29 | 22 |\n| 广州 | 33 | 25 |\n"
        "Order 1041 shipped on 2024-05-09 at 10:15, total $1,234.56 (tax 8.25%)."
    )
    return [
        ("edge/empty", ""),
        ("edge/whitespace", " \n\t \u3000\n"),
        ("edge/punctuation", "，。！？……——「」《》"),
        ("edge/one_word", "你好"),
        ("edge/short_en", "Order 1041 has shipped."),
        ("edge/short_zh", "您的快递单号1234567890已签收。"),
        ("edge/numbers", numbers),
        ("edge/numbers_only", " ".join(str(n * 7919 % 100003) for n in range(300))),
        (
            "edge/traditional",
            "國務院總理發表講話，強調經濟發展與環境保護並重，這是我們的責任。" * 3,
        ),
        (
            "edge/html",
            "<html><head><title>新闻</title><script>var a = 1 < 2;</script></head><body>"
            "<div class='nav'>首页 | 国内 | 国际</div><p>国家统计局今天发布数据，"
            "一季度国内生产总值同比增长5.3%。</p><p>专家认为&nbsp;经济&amp;就业保持稳定。</p>"
            "<!-- comment --><footer>版权所有 &copy; 2024</footer></body></html>",
        ),
        ("edge/fullwidth", "ＡＢＣ公司宣布：２０２４年营收增长１５％，ＣＥＯ称“前景广阔”。"),
        ("edge/mixed", "The Café serves crème brûlée; Straße ﬁnal ΣΊΣΥΦΟΣ — 北京 東京 서울 กรุงเทพ"),
        ("edge/combining", "Cafe\u0301 re\u0301sume\u0301 na\u0131\u0308ve " * 5),
        ("edge/emoji", "今天天气真好😀🎉！我们去公园散步吧🌳，顺便买点水果🍎。" * 2),
        ("edge/surrogate", "损坏的文本\ud800继续\udfff结束，还有一些正常的句子在这里。"),
        ("edge/binary", "\x00\x01\x02\x03abc\x04\x05\x06\x07\x08\x0e\x0f\ufffd" * 10),
        ("edge/private_use", "\ue000\ue001正文\U000f0000\U00100000内容测试一下" * 3),
        (
            "edge/mail",
            "From: Alice <alice@example.com>\nTo: list@example.org\nSubject: Re: build fails\n"
            "Date: Mon, 6 May 2024 10:00:00 +0000\n\nOn Sun, May 5, 2024, Bob wrote:\n"
            "> the build fails on arm64 with gcc 13.\n> Any idea?\n\n"
            "Try passing -O2 instead of -O3; it works here.\n-- \nAlice\n",
        ),
        (
            "edge/list",
            "Changes in 2.4.1:\n* Fix a crash when the input file is empty (#1234).\n"
            "* Speed up parsing of long lines by 30%.\n- Document the --quiet option.\n"
            "• Drop support for Python 3.7.\n",
        ),
        (
            "edge/long",
            "".join(
                f"第{i}段：" + "经济社会发展取得新成就，人民生活持续改善。" for i in range(400)
            ),
        ),
    ]


def build_texts() -> list[tuple[str, str]]:
    """Return the golden texts, (name, text), built from the repo's text sources."""
    from bench.corpora import build
    from bench.corpus import news_articles
    from tests import texts

    found: list[tuple[str, str]] = [
        (f"texts/{name}", getattr(texts, name))
        for name in ("ARTICLE", "NEAR", "EXACT", "OTHER", "FILLER", "PAGE", "FOOTER")
    ]
    found += [(f"texts/stranger/{seed}", texts.stranger(seed)) for seed in range(5)]
    found += [(f"texts/reposted/{i}", t) for i, t in enumerate(texts.reposted(6, seed=3))]
    for length, count in ((1000, 60), (200, 20), (3000, 10)):
        found += [
            (f"news_articles/{length}/{i}", text)
            for i, text in enumerate(news_articles(length, count, seed=1998))
        ]
    rng = random.Random(30)
    for name, count in (
        ("news", 50),
        ("tech_en", 40),
        ("debian", 40),
        ("mail", 40),
        ("reference_mixed", 30),
        ("templated", 50),
    ):
        docs = build(name, seed=1, split="test", size=200)
        picked = sorted(rng.sample(range(len(docs)), min(count, len(docs))))
        found += [(f"{name}/{docs[i].kind}/{i}", docs[i].text) for i in picked]
    return found + _edge_cases()


def load_texts() -> list[tuple[str, str]]:
    """Return the stored golden texts, (name, text), in order."""
    with lzma.open(TEXTS, "rt", encoding="utf-8", errors="surrogatepass") as lines:
        return [tuple(json.loads(line)) for line in lines]


def main() -> None:
    """Store the texts (--texts) or the engine's outputs for them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", action="store_true", help="build and store the texts too")
    args = parser.parse_args()
    if args.texts:
        built = build_texts()
        names = [name for name, _ in built]
        if len(set(names)) != len(names):
            raise SystemExit("two golden texts share a name")
        with lzma.open(TEXTS, "wt", encoding="utf-8", errors="surrogatepass") as out:
            for pair in built:
                out.write(json.dumps(pair, ensure_ascii=True) + "\n")
        print(f"{len(built)} texts stored in {TEXTS}")

    from dedup.engine.verify import Detector

    detector = Detector()
    found = {name: outputs(detector, text) for name, text in load_texts()}
    fields = list(next(iter(found.values())))
    stored = {
        "fields": fields,
        "texts": {name: " ".join(got[f] for f in fields) for name, got in found.items()},
    }
    OUTPUTS.write_text(json.dumps(stored, indent=0) + "\n", encoding="utf-8")
    print(f"outputs of {len(found)} texts stored in {OUTPUTS}")


def load_outputs() -> dict[str, dict[str, str]]:
    """Return the stored outputs: {text name: {field: digest}}."""
    stored = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    fields = stored["fields"]
    return {
        name: dict(zip(fields, digests.split(), strict=True))
        for name, digests in stored["texts"].items()
    }


if __name__ == "__main__":
    main()
