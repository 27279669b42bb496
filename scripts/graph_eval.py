"""What the Edge shard's graph settings cost to build and what they find, on an index's own points.

    python scripts/graph_eval.py ~/.jacked/index/shard --points 85000 --queries 30

Takes a sample of the shard's points (vectors and payloads; the shard is copied first, so a
running jacked is not disturbed), builds it into a new shard once with jacked's settings and once
with the settings before them (`ef_construct` 100, payload links on every indexed field), and
reports for each: the optimisation's wall and CPU time, and the dense leg's recall@150 against an
exact search over the original vectors, for sampled stored vectors as queries, unfiltered and under
filters on each content type, the largest repos, agent types and time. Recall counts a returned
point right when its exact score reaches the 150th exact score (generated banks repeat texts, so
many points tie). The CPU time is this process's (Qdrant Edge optimises on its threads).
"""
from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qdrant_edge as qe

from jacked.index.store import edge
from jacked.index.store.base import DENSE_VECTOR, FLOAT_INDEXES, KEYWORD_INDEXES

LIMIT = 150  # what the search asks of each leg (jacked.query.search.CANDIDATES)
Sample = list[tuple[str, dict[str, Any], dict[str, Any]]]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def read_sample(shard: Path, n: int, seed: int) -> Sample:
    """`n` of the shard's points with a dense vector (reservoir-sampled: one pass, `n` held)."""
    rng = random.Random(seed)
    sample: Sample = []
    seen = 0
    sh = qe.EdgeShard.load(str(shard))
    try:
        offset: Any = None
        while True:
            records, offset = sh.scroll(qe.ScrollRequest(offset=offset, limit=1000, with_payload=True, with_vector=True))
            for r in records:
                vectors = r.vector or {}
                if DENSE_VECTOR not in vectors:
                    continue
                point = (str(r.id), {k: v if isinstance(v, list) else qe.SparseVector(list(v.indices), list(v.values))
                                     for k, v in vectors.items()}, dict(r.payload or {}))
                seen += 1
                if len(sample) < n:
                    sample.append(point)
                elif (j := rng.randrange(seen)) < n:
                    sample[j] = point
            if offset is None:
                return sample
    finally:
        sh.close()


def build(path: Path, sample: Sample, dims: int, ef_construct: int, linked: frozenset[str]) -> tuple[Any, float, float]:
    """A shard of `sample` with these graph settings, optimised; the optimisation's wall and CPU seconds."""
    sh = qe.EdgeShard.create(str(path), edge._edge_config(qe, dims, ef_construct=ef_construct))
    for name, schema in edge._index_schemas(qe, linked):
        sh.update(qe.UpdateOperation.create_field_index(name, schema))
    for i in range(0, len(sample), 256):
        sh.update(qe.UpdateOperation.upsert_points([qe.Point(pid, v, p) for pid, v, p in sample[i:i + 256]]))
    sh.flush()
    c0, t0 = _cpu(), time.perf_counter()
    sh.optimize()
    sh.flush()
    return sh, time.perf_counter() - t0, _cpu() - c0


def filters(sample: Sample) -> dict[str, Any]:
    def value(key: str, v: Any) -> Any:
        return qe.Filter(must=[qe.FieldCondition(key=key, match=qe.MatchValue(v))])

    out: dict[str, Any] = {"none": None}
    for key, top in (("content_type", 20), ("repo_name", 4), ("agent_type", 2), ("agent", 2)):
        for v, n in Counter(p.get(key) for _, _, p in sample).most_common(top):
            if v is not None and n < len(sample):
                out[f"{key}={v} ({n})"] = value(key, v)
    ts = sorted(float(p.get("ts") or 0.0) for _, _, p in sample)
    for q in (0.5, 0.9):
        out[f"ts >= {q:.0%} point ({len(ts) - int(len(ts) * q)})"] = qe.Filter(
            must=[qe.FieldCondition(key="ts", range=qe.RangeFloat(gte=ts[int(len(ts) * q)]))])
    return out


def recall(shard: Any, queries: list[list[float]], flt: Any, truths: list[list[tuple[str, float]]]) -> tuple[float, float]:
    """Mean recall@LIMIT of jacked's dense leg (its search params) and its mean time in ms."""
    found, spent = [], 0.0
    for q, truth in zip(queries, truths):
        t = time.perf_counter()
        got = shard.query(qe.QueryRequest(limit=LIMIT, query=qe.Query.Nearest(q, using=DENSE_VECTOR), filter=flt,
                                          with_payload=False, with_vector=False,
                                          params=edge._graph_params(qe, DENSE_VECTOR, flt)))
        spent += time.perf_counter() - t
        k = min(LIMIT, len(truth))
        right = {pid for pid, score in truth if score >= truth[k - 1][1] - 1e-6} if k else set()
        found.append(sum(str(p.id) in right for p in got[:k]) / k if k else 1.0)
    return statistics.mean(found), spent / len(queries) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shard", type=Path, help="an Edge shard folder (JACKED_HOME/index/shard)")
    ap.add_argument("--points", type=int, default=85_000, help="points sampled (a segment holds up to ~85,000)")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    settings = {"jacked": (edge.EF_CONSTRUCT, edge.LINKED_FIELDS),
                "before": (100, frozenset(KEYWORD_INDEXES) | frozenset(FLOAT_INDEXES))}
    with tempfile.TemporaryDirectory(prefix="jacked-graph-eval-") as tmp:
        copy = Path(tmp) / "source"
        shutil.copytree(args.shard, copy)
        sample = read_sample(copy, args.points, args.seed)
        shutil.rmtree(copy)
        if not sample:
            print("no points with a dense vector in that shard", file=sys.stderr)
            return 1
        dims = len(sample[0][1][DENSE_VECTOR])
        rng = random.Random(args.seed)
        queries = [sample[rng.randrange(len(sample))][1][DENSE_VECTOR] for _ in range(args.queries)]
        shards = {}
        for name, (ef, linked) in settings.items():
            shards[name], wall, cpu = build(Path(tmp) / name, sample, dims, ef, linked)
            print(f"{name:7s} ef_construct {ef}, links on {', '.join(sorted(linked))}: optimised in {wall:.1f} s, {cpu:.1f} s CPU")
        exact = qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(ignore=True))
        print(f"\nrecall@{LIMIT} of the dense leg, {len(queries)} queries, {len(sample)} points")
        print(f"{'filter (points)':45s}" + "".join(f"{name:>20s}" for name in shards))
        for label, flt in filters(sample).items():
            reference = shards["jacked"]
            truths = [[(str(p.id), p.score) for p in reference.query(qe.QueryRequest(
                limit=LIMIT, query=qe.Query.Nearest(q, using=DENSE_VECTOR), filter=flt, with_payload=False,
                with_vector=False, params=exact))] for q in queries]
            cells = [recall(sh, queries, flt, truths) for sh in shards.values()]
            print(f"{label[:45]:45s}" + "".join(f"{r:>11.3f} {ms:5.1f} ms" for r, ms in cells))
        for sh in shards.values():
            sh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
