"""One engine's side of bench/speed.py: a process that times the engine it imports.

    PYTHONPATH=TREE python bench/speed_worker.py DOCS.json VERIFY.json

Run as a script with a checkout first on PYTHONPATH, it imports that checkout's engine (and its
compiled module), so two of them, this tree's and a reference commit's, can be timed in
turns by one run. It reads a task name per line on stdin and answers one JSON line: the
process's CPU seconds for the task (time.process_time: what other processes do on a shared
machine does not count) and a digest of the outputs, which both engines must agree on.
Tasks: `features` (fingerprint and features of each article), `fingerprint` (the fingerprint
alone, with a Fingerprinter of its own, so that its first round is cold too), `verify`
(candidates, boilerplate and verification of a labelled corpus whose features were made at
start) and `fingerprint_verify` (the fingerprint alone of that corpus, for the ratio).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time


def main() -> None:
    """Load the engine and the texts, then answer tasks until stdin closes."""
    import dedup
    from dedup.engine import Fingerprinter, merge
    from dedup.engine.verify import Detector

    with open(sys.argv[1], encoding="utf-8") as f:
        docs = json.load(f)
    with open(sys.argv[2], encoding="utf-8") as f:
        corpus = json.load(f)
    detector = Detector()
    alone = Fingerprinter(detector.config)
    # Dictionaries loaded, caches cold: one text each, of the texts timed by neither.
    detector.fingerprint_and_features("新华社北京电 今天天气很好。")
    alone.fingerprint("新华社北京电 今天天气很好。")
    verifier = Detector()  # its own caches: the timed rounds start cold all the same
    features = [verifier.features(text) for text in corpus]
    verify_alone = Fingerprinter(verifier.config)

    def run_features() -> str:
        digest = hashlib.sha256()
        for text in docs:
            fp, feats = detector.fingerprint_and_features(text)
            digest.update(feats.to_bytes())
            digest.update(f"{fp.value},{fp.tokens}".encode())
        return digest.hexdigest()[:12]

    def run_fingerprint(fingerprinter=alone, texts=docs) -> str:
        digest = hashlib.sha256()
        for text in texts:
            digest.update(f"{fingerprinter.fingerprint(text).value}".encode())
        return digest.hexdigest()[:12]

    def run_verify() -> str:
        found = verifier.duplicates(features)
        pairs = [(d.a, d.b, d.kind, d.similarity, d.shared_chars) for d in found]
        return hashlib.sha256(repr(pairs).encode()).hexdigest()[:12] + f" ({len(found)} pairs)"

    tasks = {
        "features": run_features,
        "fingerprint": run_fingerprint,
        "verify": run_verify,
        "fingerprint_verify": lambda: run_fingerprint(verify_alone, corpus),
    }
    info = {"engine": dedup.__file__, "native": merge.accelerated is not None}
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        task = line.strip()
        start = time.process_time()
        digest = tasks[task]()
        cpu = time.process_time() - start
        print(json.dumps({"task": task, "cpu": cpu, "digest": digest}), flush=True)


if __name__ == "__main__":
    main()
