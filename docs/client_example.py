"""A client of dedup's JSON API: submit a batch with your own ids, wait until it is
processed, and read each article's matches by your ids. Standard library only.

    python docs/client_example.py --url http://localhost:8000 --token "$DEDUP_TOKEN" \\
        --source my-cms articles.jsonl

articles.jsonl holds one article per line: {"id": "...", "title": "...", "body": "..."}.
Prints one JSON line per article: your id and the ids (yours) of the articles it copies or
is copied by. See docs/api.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class Api:
    """Calls to one dedup server with one token; waits and tries again when told to (429)."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url.rstrip("/"), token

    def call(self, method: str, path: str, params: dict | None = None, body=None) -> dict:
        url = f"{self.url}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")
        request.add_header("Content-Type", "application/json")
        while True:
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return json.load(response)
            except urllib.error.HTTPError as error:
                if error.code == 429:  # over the rate limit: wait as long as it says
                    time.sleep(int(error.headers.get("Retry-After", "5")))
                    continue
                message = json.load(error).get("error", error.reason)
                raise SystemExit(f"{method} {path}: {error.code} {message}") from None

    def submit(self, rows: list[dict]) -> list[dict]:
        """Store articles, 1,000 a request; re-sending the same ids stores nothing twice."""
        answers = []
        for start in range(0, len(rows), 1000):
            answers += self.call("POST", "/api/articles", body=rows[start : start + 1000])[
                "articles"
            ]
        return answers

    def article(self, source: str, external_id: str) -> dict:
        """Return the article your source sent with this id."""
        params = {"external_id": external_id, "source": source}
        [found] = self.call("GET", "/api/articles", params)["articles"]
        return found

    def wait(self, source: str, external_ids: list[str], timeout: float) -> None:
        """Wait until every article is processed (done, an exact copy, or failed)."""
        deadline = time.monotonic() + timeout
        waiting = list(external_ids)
        while waiting:
            waiting = [
                i for i in waiting if self.article(source, i)["status"] in ("pending", "processing")
            ]
            if waiting and time.monotonic() > deadline:
                raise SystemExit(f"still processing after {timeout} s: {waiting[:5]}")
            if waiting:
                time.sleep(1)

    def matches(self, article_id: int) -> list[dict]:
        """Return the articles an article copies or is copied by."""
        return self.call("GET", f"/api/articles/{article_id}/matches")["matches"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="JSON Lines: one article per line, each with an id")
    parser.add_argument("--url", default="http://localhost:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--source", default="client-example", help="who sends these ids")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)

    with open(args.file, encoding="utf-8") as lines:
        rows = [{**json.loads(line), "source": args.source} for line in lines if line.strip()]
    api = Api(args.url, args.token)
    submitted = api.submit(rows)
    print(
        f"submitted {len(submitted)}: "
        f"{sum(a['outcome'] == 'created' for a in submitted)} new, "
        f"{sum(a['outcome'] == 'unchanged' for a in submitted)} sent before",
        file=sys.stderr,
    )
    ids = [str(row["id"]) for row in rows]
    api.wait(args.source, ids, args.timeout)
    for external_id in ids:
        article = api.article(args.source, external_id)
        copies = [
            {"external_id": m["external_id"], "kind": m["kind"], "similarity": m["similarity"]}
            for m in api.matches(article["id"])
        ]
        print(json.dumps({"external_id": external_id, "matches": copies}, ensure_ascii=False))


if __name__ == "__main__":
    main()
