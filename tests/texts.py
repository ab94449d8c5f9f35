"""Texts for the tests: an article, its near copy, a page holding it, strangers."""

import random

ARTICLE = (
    "新华社北京1月1日电 国家主席江泽民发表1998年新年讲话，回顾过去一年的成就，展望新的世纪。"
    "他指出，我国经济保持了持续快速健康发展的良好势头，国内生产总值比上年增长百分之八点八。"
    "农业获得丰收，粮食总产量再创历史新高，工业生产稳步增长，外贸出口大幅度增加。"
    "人民生活水平进一步提高，城乡居民收入继续增长，市场供应充足，物价涨幅明显回落。"
    "他强调，新的一年要坚定不移地推进改革开放，保持社会稳定，促进经济和社会全面进步。"
)
NEAR = ARTICLE.replace("丰收", "丰产").replace("稳步", "平稳")
EXACT = "  " + ARTICLE.replace(" ", "\n ") + "\n"  # the same words, other whitespace
OTHER = (
    "本报讯 今年以来，全省粮食生产再获丰收，农民收入稳步增长，乡镇企业发展势头良好。"
    "各地加大农业投入，兴修水利设施，科技兴农取得明显成效，良种覆盖率大幅提高。"
    "农村改革不断深化，土地承包关系保持稳定，扶贫攻坚成效显著，贫困人口大幅减少。"
    "省委要求各级党委和政府继续把农业放在经济工作的首位，确保农村经济持续发展。"
)
FILLER = (
    "这是一段完全无关的评论内容，讨论的是城市交通拥堵问题以及地铁建设的长远规划。"
    "读者认为应当优先发展公共交通，限制私家车数量，并且提高停车收费的标准。"
    "也有专家指出，城市规划需要综合考虑人口分布、产业布局和生态环境保护等因素。"
    "此外，共享单车的管理问题同样值得关注，乱停乱放现象在一些地区仍然比较突出。"
) * 2
PAGE = FILLER + ARTICLE + OTHER  # the article inside a bigger page: a partial copy

_CHARACTERS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说"
    "产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点"
    "从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原"
)


def stranger(seed: int, sentences: int = 6) -> str:
    """Return an article of random words, unrelated to any other seed's."""
    rng = random.Random(seed)
    return "".join(
        "".join(rng.choice(_CHARACTERS) for _ in range(rng.randint(20, 36))) + "。"
        for _ in range(sentences)
    )


FOOTER = (
    "本网站所刊登的各种新闻、信息和各种专题专栏资料，均为本网站版权所有，未经协议授权禁止下载"
    "使用。联系电话：010-12345678，电子邮件：service@example.com。"
)


def reposted(copies: int = 50, seed: int = 7) -> list[str]:
    """Return a popular story of 12 sentences, then `copies` reposts of it, each with two
    sentences of its own (near copies, their fingerprints mostly farther apart than k), then
    five pages with a repost inside (partial copies)."""
    rng = random.Random(seed)
    story = stranger(seed, 12).split("。")[:-1]
    texts = ["。".join(story) + "。"]
    for i in range(copies):
        sentences = list(story)
        for at in rng.sample(range(len(story)), 2):
            sentences[at] = stranger(1000 * seed + 20 * i + at, 1)[:-1]
        texts.append("。".join(sentences) + "。")
    for i in range(5):
        inside = texts[rng.randrange(1, len(texts))]
        texts.append(stranger(5000 + i, 6) + inside + stranger(6000 + i, 6))
    return texts
