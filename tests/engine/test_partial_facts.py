"""Partial copies and facts (dedup.engine.facts.with_facts_kept): a
template's sentence filled in with other facts is no copied text, a quotation that moves a
version number or stops short of a passage's last number still is."""

from __future__ import annotations

from dedup.engine.verify import Detector

# A changelog entry quoted into another, its version line now "Merge from ..., which said:"
# (Debian's pygobject and guava-libraries changelogs): the pair is as similar as a near copy
# (Jaccard over 0.4), the version's numbers in another sentence.
ENTRY = (
    "pygobject (3.42.0-3) unstable; urgency=medium\n\n  * Team upload\n"
    "  * d/tests/control: Accept and ignore warnings on stderr in python3-all\n"
    "    test. This works around pygobject not fully implementing PEP-0451 yet\n"
    "    (#1002662) by making it non-RC. It might become RC again in a future\n"
    "    Python release, but hopefully upstream can implement PEP-0451 by\n"
    "    then. (Closes: #1001368)\n\n"
    " -- Simon McVittie <smcv@debian.org>  Sun, 26 Dec 2021 21:24:46 +0000"
)
MERGED = (
    "guava-libraries (31.1-1) unstable; urgency=medium\n\n  * New upstream release\n"
    "    - Refreshed the patches\n"
    "  * Depend on liberror-prone-java instead of adding the annotations source files\n"
    "  * Standards-Version updated to 4.6.1\n  * Merge from 3.42.0-3, which said:\n"
    "    * d/tests/control: Accept and ignore warnings on stderr in python3-all\n"
    "    test. This works around pygobject not fully implementing PEP-0451 yet\n"
    "    (#1002662) by making it non-RC. It might become RC again in a future\n"
    "    Python release, but hopefully upstream can implement PEP-0451 by\n\n"
    " -- Emmanuel Bourg <ebourg@apache.org>  Mon, 12 Dec 2022 18:38:25 +0100"
)
# Items quoted from libksba's entry into tiff's, the last cut short of its "Closes: #...".
ITEMS = (
    "libksba (1.6.0-3) unstable; urgency=medium\n\n"
    "  * Also build mingw with -ffile-prefix-map=$(CURDIR)=. for reproducibility.\n"
    '    (Thanks, Vagrant Cascadian!) Closes: #1003997\n  * Run "wrap-and-sort -ast".\n'
    "  * 25_norevisionfromgit.diff: Stop trying to pull version info from GIT when\n"
    '    autoconf is run, resulting in a "-unknown" version suffix.\n'
    "    Closes: #1014149\n  * Update lintian override.\n\n"
    " -- Andreas Metzler <ametzler@debian.org>  Tue, 12 Jul 2022 14:42:35 +0200"
)
QUOTED = (
    "tiff (4.5.0~rc3+git221213-1) experimental; urgency=medium\n\n"
    "  * New git snapshot release.\n  * Changes carried over from 1.6.0-3:\n"
    '    (Thanks, Vagrant Cascadian!) Closes: #1003997\n    * Run "wrap-and-sort -ast".\n'
    "    * 25_norevisionfromgit.diff: Stop trying to pull version info from GIT when\n"
    '    autoconf is run, resulting in a "-unknown" version suffix.\n\n'
    " -- Laszlo Boszormenyi (GCS) <gcs@debian.org>  Wed, 14 Dec 2022 17:36:48 +0100"
)


def test_a_quoted_entry_whose_version_moved_is_a_partial_copy():
    # As similar as a near copy, but its version's facts are not where they were: not near,
    # and the items it quotes whole are a partial copy.
    detector = Detector()
    found = detector.judge(0, 1, detector.features(ENTRY), detector.features(MERGED))
    assert found is not None and found.kind == "partial"
    assert found.shared_chars >= 200


def test_a_quotation_cut_short_of_a_passages_last_number_is_a_partial_copy():
    # The number left out is stated nowhere else in the quoting entry: no fact changed.
    detector = Detector()
    found = detector.judge(0, 1, detector.features(ITEMS), detector.features(QUOTED))
    assert found is not None and found.kind == "partial"
    assert len(found.shared_passages) == 2


def market_close(day: int, change: str, index: str, other: str, volume: int, rising: int) -> str:
    """Return a short market close: its figures around a commentary every close repeats."""
    return (
        f"12月{day}日收盘：沪指{change}报{index}点，深成指报{other}点，两市成交额{volume}亿元。"
        f"盘面上，个股涨多跌少，{rising}只个股上涨，光伏板块领涨，地产板块跌幅居前。"
        "分析人士认为，短期市场仍以震荡为主，投资者宜控制仓位，关注业绩确定性较强的板块。"
    )


def test_market_closes_of_other_days_are_no_near_copies():
    # Short texts (near at 0.3) sharing a commentary and the template's words: their
    # passages holding figures are not mostly in the other, so only the whole article's
    # numbers tell them apart (a new user's own data did).
    closes = [
        market_close(2, "涨1.22%", "3250.38", "10485.46", 10514, 4248),
        market_close(3, "涨0.15%", "3242.69", "10734.23", 10598, 1171),
        market_close(4, "涨0.49%", "3324.01", "10699.02", 8258, 1243),
        market_close(5, "跌0.14%", "3224.81", "10464.32", 11450, 1800),
    ]
    detector = Detector()
    found = detector.duplicates([detector.features(t) for t in closes])
    assert [(d.a, d.b, d.kind) for d in found] == []
    # The same close, edited, is still a near copy.
    edited = closes[0].replace("光伏板块领涨", "白酒板块领涨")
    copy = detector.judge(0, 1, detector.features(closes[0]), detector.features(edited))
    assert copy is not None and copy.kind == "near"
