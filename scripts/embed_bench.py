#!/usr/bin/env python3
"""The default model run two ways, measured in the same run: jacked's own onnxruntime path
(`jacked.index.embed._MeanPooledOnnx`) against fastembed itself (`TextEmbedding` given the same
local model folder, nothing fetched).

    python scripts/embed_bench.py [--rounds 3] [--sessions 200] [--only load,embed,real,gen]

Each figure comes from a fresh process per runtime and round, the two runtimes alternating
(their order flipped every round); the median of the rounds is printed with its range and the
ratio fastembed ÷ jacked.

load    process start to the first query vector (imports, model load, one query), and the
        process's RSS then.
embed   texts/s of `DenseEmbedder.embed_documents` alone on the texts a backfill of the real
        fixtures embeds (model loaded and warmed first), and the peak RSS.
real    cold backfill (fresh JACKED_HOME, model folder included) of tests/fixtures/claude-code/real.
gen     the same on a generated corpus of `--sessions` sessions (scripts/gen_corpus.py).
vectors the cosine of the two runtimes' vectors on the real fixtures' texts (min, and how many
        are bit-identical).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REAL = ROOT / "tests" / "fixtures" / "claude-code" / "real"
RUNTIMES = ("jacked", "fastembed")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def _peak_mb() -> float:
    # VmHWM, not getrusage's ru_maxrss: a child started by fork and exec inherits its parent's peak in
    # ru_maxrss (this script's parent peaks at ~530 MB while it backfills to collect the texts).
    return _status_mb("VmHWM")


def _use_fastembed() -> None:
    """Make the default model load through fastembed's TextEmbedding from its local folder."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from jacked.index import embed

    def load(self: object, model_name: str, cache_dir: Path, threads: int) -> object:
        from fastembed import TextEmbedding

        embed._register_default_model()
        return TextEmbedding(embed.DEFAULT_MODEL, specific_model_path=str(embed.prepare_default_model_dir(cache_dir)),
                             threads=threads, local_files_only=True)

    embed.OfflineMiniLM.load = load  # type: ignore[method-assign]


def _settings(claude: Path, home: Path):  # type: ignore[no-untyped-def]
    from jacked.config import Settings

    return Settings(claude_dir=claude, home=home, user_name="bench")


def _texts(claude: Path, home: Path) -> list[str]:
    """The texts a backfill of `claude` embeds, in order."""
    from jacked.index.extract import Extractor
    from jacked.index.indexer import Indexer

    indexer = Indexer(_settings(claude, home))
    indexer.backfill()
    dense = indexer.dense
    extractor = Extractor(indexer.catalog, dense.count_tokens, dense.max_tokens)
    return list(dict.fromkeys(d.text for sid in indexer.catalog.session_ids()
                              for d in extractor.documents(sid) if d.dense))


def child(runtime: str, task: str, arg: str, work: Path) -> dict[str, float]:
    if runtime == "fastembed":
        _use_fastembed()
    from jacked.index.embed import DenseEmbedder

    if task == "load":
        vec = DenseEmbedder(cache_dir=work / "models").embed_query("plan mode manifest")
        return {"s": time.perf_counter() - T0, "rss": _rss_mb(), "dims": len(vec)}
    if task == "embed":
        texts = json.loads(Path(arg).read_text())
        dense = DenseEmbedder(cache_dir=work / "models")
        dense.embed_documents(texts[:8])
        t = time.perf_counter()
        dense.embed_documents(texts)
        s = time.perf_counter() - t
        return {"s": s, "texts_per_s": len(texts) / s, "peak": _peak_mb()}
    if task == "vectors":
        texts = json.loads(Path(arg).read_text())
        Path(arg + f".{runtime}.json").write_text(json.dumps(DenseEmbedder(cache_dir=work / "models").embed_documents(texts)))
        return {}
    from jacked.index.indexer import Indexer  # task "backfill": a fresh home each time

    home = work / f"home-{runtime}-{os.getpid()}"
    t = time.perf_counter()
    report = Indexer(_settings(Path(arg), home)).backfill()
    s = time.perf_counter() - t
    shutil.rmtree(home, ignore_errors=True)
    return {"s": s, "peak": _peak_mb(), "texts": report.texts_embedded}


def run_child(runtime: str, task: str, arg: str, work: Path) -> dict[str, float]:
    env = {**os.environ, "JACKED_DAEMON": "off", "JACKED_HOME": str(work / "unused-home")}
    out = subprocess.run([sys.executable, __file__, "--child", runtime, task, arg, str(work)], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--only", default="vectors,load,embed,real,gen")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        runtime, task, arg, work = args.child
        print(json.dumps(child(runtime, task, arg, Path(work))))
        return 0

    work = Path(tempfile.mkdtemp(prefix="jacked-embed-bench-"))
    try:
        texts_file = work / "texts.json"
        texts_file.write_text(json.dumps(_texts(REAL, work / "texts-home") if {"vectors", "embed"} & set(
            args.only.split(",")) else []))
        gen = Path(tempfile.gettempdir()) / f"jacked-bench-corpus-{args.sessions}-1"
        if "gen" in args.only and not (gen / "truth.json").exists():
            subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), "--out", str(gen),
                            "--sessions", str(args.sessions), "--seed", "1"], check=True, capture_output=True)
        run_child("jacked", "load", "-", work)  # the model folder and its optimized graph, made once
        print(f"{len(json.loads(texts_file.read_text()))} texts from the real fixtures; {args.rounds} rounds, "
              "fresh process each", flush=True)
        if "vectors" in args.only:
            import numpy as np

            for rt in RUNTIMES:
                run_child(rt, "vectors", str(texts_file), work)
            a, b = (np.array(json.loads(Path(f"{texts_file}.{rt}.json").read_text())) for rt in RUNTIMES)
            cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            print(f"vectors: min cosine {cos.min():.7f}, max |diff| {np.abs(a - b).max():.2e}, "
                  f"bit-identical {int((a == b).all(1).sum())}/{len(a)}")
        tasks = {"load": ("load", "-", ["s", "rss"]), "embed": ("embed", str(texts_file), ["texts_per_s", "peak"]),
                 "real": ("backfill", str(REAL), ["s", "peak"]), "gen": ("backfill", str(gen), ["s", "peak"])}
        for name, (task, arg, keys) in tasks.items():
            if name not in args.only:
                continue
            got: dict[str, list[dict[str, float]]] = {rt: [] for rt in RUNTIMES}
            for rnd in range(args.rounds):
                for rt in (RUNTIMES if rnd % 2 == 0 else RUNTIMES[::-1]):
                    got[rt].append(run_child(rt, task, arg, work))
            for key in keys:
                med = {rt: statistics.median(r[key] for r in got[rt]) for rt in RUNTIMES}
                ranges = {rt: f"{min(r[key] for r in got[rt]):.2f}-{max(r[key] for r in got[rt]):.2f}" for rt in RUNTIMES}
                print(f"{name:6s} {key:12s} jacked {med['jacked']:9.2f} ({ranges['jacked']})  fastembed "
                      f"{med['fastembed']:9.2f} ({ranges['fastembed']})  ratio {med['fastembed'] / med['jacked']:.2f}",
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
