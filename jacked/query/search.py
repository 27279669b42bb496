"""Search: dense and BM25 candidates fused per session, exact phrases first, then weighted.

Each leg (dense cosine, BM25) returns its best `CANDIDATES` points with their raw scores.
A session's score on a leg is built from its best three matches on that leg (one strong
match counts most, corroborating ones break ties); the two legs are normalised by the best
session of the query and mixed: the lexical leg's share grows with how much of the query its
best texts hold (`LEXICAL_SHARE_RANGE`). Fusing sessions rather than points lets a
session that matches on both legs, or on several points, rise above one that matches once;
scoring by value rather than rank lets a clearly better lexical match win over a middling
semantic one (equal-weight RRF over points let the weaker dense leg pull good BM25 ranks
down). A session holding the query verbatim — a quoted phrase, an error line, a path, or
plain words as typed — is ranked above every session that does not. jacked's own labels
("prompt: ", "Asked: ") are never a match (`jacked.index.labels`).

The relevance is then weighted for whose session it is (own 1.0, teammate
`teammate_weight`), where it was (current repo 1.0, other `other_repo_weight`) and when
(`0.5 ** (age_weeks / time_decay_halflife_weeks)`). Forks and resumes whose best match is
the very same text are shown once. Every answer says how sure it is (`confidence`).
"""
from __future__ import annotations

import re
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jacked.catalog.index_state import PENDING
from jacked.config import Settings
from jacked.index.labels import searchable
from jacked.query.filters import conditions as filter_conditions
from jacked.query.ids import mark_short_ids
from jacked.query.options import SearchError, SearchOptions
from jacked.query.options import current_repo_name as current_repo_name  # re-exported: its users import it from here
from jacked.query.timephrase import find_time_phrase
from jacked.util.time import age_days, catalog_iso, now_utc, relative_age

MAX_QUERY_CHARS = 2000
CANDIDATES = 150  # points each leg (dense, BM25) brings to the session fusion
# What ranking needs of a point the catalog does not know (a teammate's, on a server).
KEY_FIELDS = ["session_id", "content_hash", "user_name", "repo_name", "session_started_at", "session_ended_at",
              "timestamp", "agent"]
# What a shown match needs.
SHOW_FIELDS = ["content_type", "text", "turn_index", "title"]
EXACT_CHECKED = 30  # the best lexical hits whose text is read for a verbatim match
# Sessions (in the lexical leg's order) whose turns' raw text is read for copied text (an error
# line, a path) that none of the best lexical hits holds: a long tool output is many windows, and
# the one holding the string need not be among the best hits.
RAW_CHECKED_SESSIONS = 40
RAW_SHOWN_BEFORE = 80  # characters of a raw text's match shown before it
MATCHES_SHOWN = 3
SNIPPET_CHARS = 400
# Weights of a session's 1st, 2nd and 3rd best matches in its score on a leg: one strong
# match counts most, corroborating matches break ties between similar sessions.
MATCH_WEIGHTS = (1.0, 0.35, 0.15)
# The lexical leg's share of the fused relevance (the dense leg has the rest) follows the share of
# the query's BM25 terms that one of the best lexical hits holds (its coverage): 0.1 when none
# holds any (a paraphrase: the words shared are incidental), 0.5 when one holds them all (the
# user's own words), coverage ** 1.5 between (a paraphrase shares a third to a half of its words).
# Chosen on the dev sets (the real dev set, the generated banks of seeds 1–3, the public
# benchmark's dev part): a fixed 0.4 let incidental lexical matches pull paraphrases down, to
# below the dense leg alone on two generated banks of three.
LEXICAL_SHARE_RANGE = (0.1, 0.5)
COVERAGE_POWER = 1.5
LEXICAL_SHARE = 0.4  # what a shown match's own score mixes (display only)
COVERAGE_HITS = 5  # the best lexical hits read for the query's coverage
# Age decays only this part of a session's weight: recency orders sessions that are about
# equally relevant, it must not bury the one session that holds the answer.
RECENCY_FLOOR = 0.8

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitize_query(query: str) -> str:
    """Control characters stripped, whitespace folded, at most 2,000 characters."""
    q = " ".join(_CONTROL.sub(" ", query or "").split())
    if not q:
        raise SearchError("empty query: give some words to search for")
    return q[:MAX_QUERY_CHARS]




_WORD = re.compile(r"[a-z0-9]+")
# A word with inner punctuation: a path, a dotted or snake_case name, a flag, a version.
_IDENTIFIER = re.compile(r"[a-z0-9][_/.:\\-]+[a-z0-9_]|(?:^|\s)[_./-]+[a-z0-9]")
# A camelCase or PascalCase name of three parts or more (DateTimeField, isImageFile): code, not
# prose; one inner capital (JavaScript, GitHub) is a product name people type as a word.
_CAMEL = re.compile(r"[a-z0-9][A-Z][A-Za-z0-9]*?[a-z0-9][A-Z]")
# Marks of text copied rather than typed: an error line's colon or quotes, brackets, an
# operator, a word with digits in it (E501, SIM115, v2).
_VERBATIM = re.compile(r"[:'\"()\[\]{}<>=#@!$%^&*|\\]|[a-z][0-9]|[0-9][a-z]")
_QUOTED = re.compile(r'"([^"]+)"|`([^`]+)`')
PHRASE_MIN_WORDS = 3
# Plain words are matched as typed only when they hold this many BM25 terms (not "fix it").
PLAIN_PHRASE_MIN_TERMS = 2


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def exact_phrases(query: str) -> list[str]:
    """What the query asks for verbatim: its "quoted" or `backticked` parts, else the whole
    query when it reads as copied text (an identifier, a camelCase name, or three words or more with an error
    line's punctuation or a word with digits). Plain words are left to the search, which
    matches them as typed when they hold two terms or more."""
    quoted = [_fold(a or b) for a, b in _QUOTED.findall(query) if (a or b).strip()]
    if quoted:
        return quoted
    q = _fold(query)
    if (_IDENTIFIER.search(q) or _CAMEL.search(query)
            or (len(_WORD.findall(q)) >= PHRASE_MIN_WORDS and _VERBATIM.search(q))):
        return [q]
    return []


def _phrase_patterns(phrases: list[str]) -> list[tuple[str, re.Pattern[str]]]:
    """(longest word, pattern) of each phrase; a phrase must not start or end inside a word
    ("ci" is not in "specific")."""
    return [(max(p.split(), key=len),
             re.compile(("(?<![a-z0-9])" if p[0].isalnum() else "") + re.escape(p)
                        + ("(?![a-z0-9])" if p[-1].isalnum() else "")))
            for p in phrases]


def _shown_at(text: str, patterns: list[tuple[str, re.Pattern[str]]], at: int) -> int:
    """Where the phrase found at `at` in the text without labels starts in the shown text: labels
    only take characters out, so it is the first match from there on."""
    m = patterns[0][1].search(" ".join(text.lower().split()), at)
    return m.start() if m else at


def _found_at(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> int | None:
    """Where (in the whitespace-folded text) the first phrase starts, when `text` holds every
    phrase; None otherwise. The cheap test (each phrase's longest word) goes first."""
    low = text.lower()
    if not all(probe in low for probe, _ in patterns):
        return None
    folded = " ".join(low.split())
    found = [pat.search(folded) for _, pat in patterns]
    return found[0].start() if all(found) else None  # type: ignore[union-attr]  # all() checked every match


def _search_around(text: str, word: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """`pattern.search(text)`, looked for only around the places that hold `word`, a word every match
    holds: a raw text runs to 200,000 characters, and `str.find` passes over them many times faster
    than the regex. A match found in a window is checked again on the whole text (its lookarounds)."""
    reach = 4 * len(pattern.pattern) + 256  # the most a match can stretch on either side of the word
    at = text.find(word)
    while at >= 0:
        end = at + len(word) + reach
        m = pattern.search(text, max(0, at - reach), end)
        while m is not None:
            if (whole := pattern.match(text, m.start())) is not None:
                return whole
            m = pattern.search(text, m.start() + 1, end)
        at = text.find(word, at + 1)
    return None


@dataclass
class _Session:
    """A session's candidate points from both legs."""

    meta: dict[str, Any]  # session_id, user_name, repo_name, session_started_at, session_ended_at
    dense: list[float] = field(default_factory=list)
    lexical: list[float] = field(default_factory=list)
    points: dict[str, dict[str, Any]] = field(default_factory=dict)  # content key → point id and leg scores
    exact: bool = False
    waiting: bool = False  # some of its points have no dense vector yet (a backfill's dense pass is under way)


class Searcher:
    """Answers queries against one open store; load once, ask many (for `--batch`).

    The legs return ids and scores only: on an Edge shard, reading a point's payload costs
    more than finding it. What ranking needs of a point (its session, its content hash) comes
    from the catalog, which recorded it when indexing; only points the catalog does not know
    (a teammate's, on a server) are read for it. Texts are read for the matches shown and,
    when the query asks for a phrase, for the best lexical hits.
    """

    def __init__(self, settings: Settings, store: Any, dense: Any, sparse: Any, catalog: Any | None = None) -> None:
        self.settings = settings
        self.store = store
        self.dense = dense
        self.sparse = sparse
        self.catalog = catalog
        self._shown: dict[str, dict[str, Any]] = {}

    def search(self, query: str, opts: SearchOptions) -> dict[str, Any]:
        """The `search --json` object for one query."""
        from jacked.index.store import TS_FIELD, SearchFilter

        opts.validate()
        q = sanitize_query(query)
        now = opts.now or now_utc()
        values = opts.filter_values()
        if opts.mine:
            values["user"] = self.settings.user_name
        extra = filter_conditions(values, now)
        if opts.as_of is not None:
            extra.append(("lt", TS_FIELD, opts.as_of.timestamp()))
        # Time words ("last week", "in March") are the date range the user means, in the local
        # zone, unless a date filter is given explicitly; the legs then search the other words.
        when = find_time_phrase(q, now.astimezone()) if opts.time_words else None
        time_filter: dict[str, Any] | None = None
        searched = q
        if when is not None:
            explicit = [name for name in ("since", "until") if values.get(name)]
            time_filter = {**when.as_json(), "applied": not explicit}
            if explicit:
                time_filter["overridden_by"] = explicit
            else:
                extra += [("gte", TS_FIELD, when.since.timestamp()), ("lt", TS_FIELD, when.until.timestamp())]
                searched = when.rest(q) or q
        flt = SearchFilter(content_types=opts.content_types(), extra=extra)
        phrases = copied = exact_phrases(searched)
        # Quotes and backticks mark a phrase; the legs get the words alone.
        words = _QUOTED.sub(lambda m: m.group(1) or m.group(2), searched) if phrases else searched
        # The model embeds the query on another thread (onnxruntime lets go of the GIL) while
        # the lexical leg runs and the catalog is read for its hits. Qdrant Edge keeps the GIL
        # through a query: the lexical leg waits until the model's run has begun, or the run
        # would wait for the leg (at 10,000 sessions the embedding ended ~11.5 ms into a search
        # that way, against ~6.7 ms for the embedding alone).
        running = threading.Event()
        dense_vec = _worker().submit(self.dense.embed_query, words, running)
        if self.dense.is_loaded:  # a cold process's model is still loading: no waiting for it
            running.wait(0.05)
        sparse_vec = self.sparse.embed_query(words)
        if not phrases and len(set(sparse_vec.indices)) >= PLAIN_PHRASE_MIN_TERMS:
            # Plain words a text holds as typed, in order ("required parameter"), are its verbatim
            # match too: BM25 alone weighs them as loose words, and texts that repeat one of them
            # (a prompt, then its summary) outrank the one text holding them together.
            phrases = [_fold(words)]
        _, lexical_hits = self.store.search_each(None, sparse_vec, flt, limit=CANDIDATES, fields=[])
        keys = self._point_keys(list(dict.fromkeys(h.id for h in lexical_hits)))
        self._shown = {}  # point id → what a shown match needs (read once per query)
        # Verbatim matches are among the best lexical hits: found while the model still embeds.
        exact = self._exact_at(lexical_hits[:EXACT_CHECKED], _phrase_patterns(phrases)) if phrases else {}
        # A turn's raw text is indexed as its `chunk` points, of the main chain.
        raw_searched = (copied and not opts.agent_type
                        and all(not types or "chunk" in types for types in (opts.content_types(), opts.types)))
        raw_exact = self._raw_exact(lexical_hits, keys, exact, _phrase_patterns(copied), opts.as_of) if raw_searched else {}
        coverage = self._coverage(lexical_hits[:COVERAGE_HITS], sparse_vec)
        dense_hits, _ = self.store.search_each(dense_vec.result(), None, flt, limit=CANDIDATES, fields=[])
        keys.update(self._point_keys([i for i in dict.fromkeys(h.id for h in dense_hits) if i not in keys]))
        sessions = self._sessions(dense_hits, lexical_hits, keys)
        _mark_exact(exact, keys, sessions)
        self._mark_raw_exact(raw_exact, sessions)
        low, high = LEXICAL_SHARE_RANGE
        results = self._rank(sessions, opts, now, low + (high - low) * coverage ** COVERAGE_POWER)
        confidence = self._confidence(results, sparse_vec, self._topical(dense_vec.result()))
        mark_short_ids(self.catalog, results)
        answer: dict[str, Any] = {"query": q, "confidence": confidence, "results": results}
        if time_filter is not None:
            answer["time_filter"] = time_filter
        return answer

    def _point_keys(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """point id → its session, content hash, user and the session's repo and times."""
        keys = self.catalog.point_rows(ids) if self.catalog is not None else {}
        missing = [i for i in ids if i not in keys]
        if missing:
            keys.update((h.id, h.payload) for h in self.store.retrieve(missing, KEY_FIELDS))
        return keys

    @staticmethod
    def _sessions(dense_hits: list[Any], lexical_hits: list[Any],
                  keys: dict[str, dict[str, Any]]) -> dict[str, _Session]:
        sessions: dict[str, _Session] = {}
        for leg, hits in (("dense", dense_hits), ("lexical", lexical_hits)):
            for h in hits:
                meta = keys.get(h.id)
                if not meta or not (sid := meta.get("session_id")):
                    continue
                s = sessions.get(sid)
                if s is None:
                    s = sessions[sid] = _Session(meta)
                key = meta.get("content_hash") or h.id
                point = s.points.get(key)
                if point is None:
                    if key.startswith(PENDING):  # recorded as waiting for its dense vector
                        s.waiting = True
                    point = s.points[key] = {"id": h.id, "dense": 0.0, "lexical": 0.0}
                elif point[leg]:
                    continue  # the same text twice in a session counts once
                point[leg] = h.score
                getattr(s, leg).append(h.score)
        return sessions

    def _exact_at(self, hits: list[Any], patterns: list[tuple[str, re.Pattern[str]]]) -> dict[str, int]:
        """point id → where the phrase starts in its text, for the `hits` holding it verbatim
        (their payloads kept: a match found so is shown too)."""
        found: dict[str, int] = {}
        for h in self.store.retrieve([h.id for h in hits], SHOW_FIELDS):
            self._shown[h.id] = h.payload  # read once: the match may be shown too
            text = h.payload.get("text") or ""
            # jacked's own labels ("prompt: ", "Asked: ") are no match: the text without them is judged.
            at = _found_at(searchable(h.payload.get("content_type"), text), patterns)
            if at is not None:
                found[h.id] = _shown_at(text, patterns, at)
        return found

    def _raw_exact(self, lexical_hits: list[Any], keys: dict[str, dict[str, Any]], exact: dict[str, int],
                   patterns: list[tuple[str, re.Pattern[str]]],
                   as_of: datetime | None = None) -> dict[str, tuple[int, str, int]]:
        """session → (turn index, excerpt, where the match starts in it) for the sessions among the
        lexical leg's that hold copied text in a turn's raw text, when no point of theirs already
        showed it verbatim."""
        if self.catalog is None:
            return {}
        done = {keys[i].get("session_id") for i in exact if i in keys}
        order = [sid for sid in dict.fromkeys(keys[h.id].get("session_id") for h in lexical_hits if h.id in keys)
                 if sid and sid not in done][:RAW_CHECKED_SESSIONS]
        found: dict[str, tuple[int, str, int]] = {}
        probe = max((probe for probe, _ in patterns), key=len)
        # Raw texts are long: matched as written (any whitespace between words), not folded first.
        loose = [re.compile(pat.pattern.replace(re.escape(" "), r"\s+")) for _, pat in patterns]
        before = catalog_iso(as_of) if as_of else None
        for sid, turn_index, text in self.catalog.raw_texts_of(order, probe, before):
            if sid in found:
                continue
            low = text.lower()
            matches = [_search_around(low, word, pat) for (word, _), pat in zip(patterns, loose, strict=True)]
            if all(matches):
                at = matches[0].start()  # type: ignore[union-attr]  # all() checked every match
                start = text.rfind(" ", 0, max(0, at - RAW_SHOWN_BEFORE)) + 1
                before = " ".join(text[start:at].split())
                found[sid] = (turn_index, " ".join(text[start:at + SNIPPET_CHARS * 2].split()), len(before) + 1 if before else 0)
        return found

    def _mark_raw_exact(self, raw_exact: dict[str, tuple[int, str, int]], sessions: dict[str, _Session]) -> None:
        """Mark the sessions whose raw text holds the copied text, with that excerpt as their first match."""
        for sid, (turn_index, excerpt, at) in raw_exact.items():
            s = sessions.get(sid)
            if s is None:
                continue
            s.exact = True
            shown_id = f"raw:{sid}:{turn_index}"
            self._shown[shown_id] = {"content_type": "chunk", "text": excerpt, "turn_index": turn_index}
            # keyed by the excerpt: a fork showing the same lines is the same match
            s.points["raw:" + excerpt] = {"id": shown_id, "dense": 0.0, "lexical": 0.0, "exact": True, "at": at}

    def _coverage(self, hits: list[Any], query_vec: Any) -> float:
        """The largest share of the query's BM25 terms that one of `hits` holds (jacked's labels
        left out); their texts are kept for showing."""
        terms = set(query_vec.indices)
        if not terms or not hits:
            return 0.0
        wanted = [h.id for h in hits if h.id not in self._shown]
        self._shown.update((h.id, h.payload) for h in self.store.retrieve(wanted, SHOW_FIELDS))
        texts = [searchable(p.get("content_type"), p.get("text") or "") for p in (self._shown.get(h.id) for h in hits) if p]
        held = (len(terms.intersection(v.indices)) for v in self.sparse.embed_documents(texts)) if texts else iter(())
        return max(held, default=0) / len(terms)

    def _rank(self, sessions: dict[str, _Session], opts: SearchOptions, now: datetime,
              lexical_share: float = LEXICAL_SHARE) -> list[dict[str, Any]]:
        w = self.settings
        teammate = opts.weights.get("teammate_weight", getattr(w, "teammate_weight", 0.8))
        other_repo = opts.weights.get("other_repo_weight", getattr(w, "other_repo_weight", 0.7))
        halflife = opts.weights.get("time_decay_halflife_weeks", getattr(w, "time_decay_halflife_weeks", 35))
        # 1.0 / 0.0: the lexical or the dense leg alone (how the benchmarks measure each leg).
        lexical_share = opts.weights.get("lexical_share", lexical_share)

        def leg_score(scores: list[float]) -> float:
            if len(scores) < 2:
                return scores[0] if scores else 0.0
            return sum(wt * sc for wt, sc in zip(MATCH_WEIGHTS, sorted(scores, reverse=True)))

        recency: dict[Any, float] = {}  # session end time → its weight (sessions often share none, but parse once)

        dense_of = {sid: leg_score(s.dense) for sid, s in sessions.items()}
        lexical_of = {sid: leg_score(s.lexical) for sid, s in sessions.items()}
        tops = (max(dense_of.values(), default=0.0) or 1.0, max(lexical_of.values(), default=0.0) or 1.0)
        scored = []
        for sid, s in sessions.items():
            m = s.meta
            relevance = lexical_share * lexical_of[sid] / tops[1] + (1 - lexical_share) * dense_of[sid] / tops[0]
            if s.waiting and not s.dense and lexical_share:
                # Not embedded yet, so the dense leg cannot see it: its words alone decide.
                relevance = lexical_of[sid] / tops[1]
            weight = 1.0
            if m.get("user_name") and m.get("user_name") != w.user_name:
                weight *= teammate
            if opts.current_repo and m.get("repo_name") and m.get("repo_name") != opts.current_repo:
                weight *= other_repo
            ended = m.get("session_ended_at") or m.get("timestamp")
            if ended not in recency:
                days = age_days(ended, now)
                recency[ended] = (1.0 if days is None or not halflife else
                                  RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (max(days, 0) / 7 / halflife))
            weight *= recency[ended]
            if not (s.lexical if lexical_share == 1 else s.dense if lexical_share == 0 else True):
                continue  # found only by the leg left out (a leg measured alone)
            scored.append((not (s.exact and lexical_share), -relevance * weight, sid, relevance))
        # Verbatim matches first, whatever their weights: the user asked for that string.
        scored.sort()
        results: list[dict[str, Any]] = []
        seen_dup: dict[str, list[str]] = {}  # content key → the `also` list of the result shown for it
        # Only the sessions that can still make the list are looked at closely, a page at a time;
        # a copy of a session already listed is only named (`also`): nothing of it is read.
        for page in range(0, len(scored), opts.limit * 3):
            chunk = scored[page:page + opts.limit * 3]
            shown_of = {c[2]: _best_points(sessions[c[2]], tops) for c in chunk}
            content_of = {sid: _content_key(sessions[sid], shown) for sid, shown in shown_of.items()}
            # A fork or resume that only repeats another session's turns is that session again.
            # Sessions whose best match was listed already are only named: no need to ask.
            unseen = [sid for sid, key in content_of.items() if key not in seen_dup]
            copies = self.catalog.copies_of(unseen) if self.catalog is not None and unseen else {}
            listed: list[tuple[str, float, float, list[dict[str, Any]], list[str]]] = []
            for _, neg_score, sid, relevance in chunk:
                shown = shown_of[sid]
                keys = [k for k in (content_of[sid], "session:" + copies.get(sid, sid)) if k]
                also = next((seen_dup[k] for k in keys if k in seen_dup), None)
                if also is not None:
                    also.append(sid)
                    continue
                also = []
                for k in keys:
                    seen_dup[k] = also
                listed.append((sid, -neg_score, relevance, shown, also))
                if len(results) + len(listed) >= opts.limit:
                    break
            wanted = [p["id"] for *_, shown, _ in listed for p in shown if p["id"] not in self._shown]
            self._shown.update((h.id, h.payload) for h in self.store.retrieve(wanted, SHOW_FIELDS))
            for sid, score, relevance, shown, also in listed:
                r = _result(sid, sessions[sid], shown, self._shown, score, relevance, now)
                r["also"] = also  # filled by later copies, even from later pages
                results.append(r)
            if len(results) >= opts.limit:
                break
        for r in results:
            if not r["also"]:
                del r["also"]
        self._fill_titles(results)
        return results

    def _topical(self, query_dense: list[float]) -> bool:
        """Whether the query says enough for its cosines to count: its embedding is not close to
        the empty query's. Near that point ("ok", "x", "yes") a query is about nothing, and its
        cosine to any short text ("A", "continue") is that of two near-empty texts, as high as a
        real match's."""
        empty = _EMPTY_QUERY.get(self.dense)
        if empty is None:
            empty = _EMPTY_QUERY[self.dense] = self.dense.embed_query("")
        return sum(a * b for a, b in zip(query_dense, empty)) < EMPTY_COSINE

    def _confidence(self, results: list[dict[str, Any]], query_vec: Any, topical: bool = True) -> str:
        """How sure the best answer is: "high", "medium", "low", or "none" without results.

        From what does not depend on the rest of the corpus: a verbatim match; the share of
        the query's words (BM25 terms) that the best session's top matches hold; the best
        cosine, when the query is `topical`. Each result gets its own; the answer's is its
        first result's.
        """
        terms = set(query_vec.indices) if query_vec is not None else set()
        terms_of: dict[str, set[int]] = {}  # text → the query's terms it holds (forks show the same texts)
        for r in results:
            texts = r.pop("_texts")
            best_dense = r.pop("_best_dense")
            coverage = 0.0
            if terms:
                held: set[int] = set()
                for text in texts:
                    if text not in terms_of:
                        terms_of[text] = terms.intersection(self.sparse.embed_documents([text])[0].indices)
                    held |= terms_of[text]
                    if len(held) == len(terms):
                        break  # every term found: the rest cannot add any
                coverage = len(held) / len(terms)
            r["confidence"] = _grade(r["exact"], coverage, best_dense if topical else 0.0)
            # The grade by words and meaning alone: a verbatim match of a name every session of
            # the code holds says little of what the session is about (the recall hook asks).
            r["words_confidence"] = _grade(False, coverage, best_dense if topical else 0.0)
        return results[0]["confidence"] if results else "none"

    def _fill_titles(self, results: list[dict[str, Any]]) -> None:
        """Title or first prompt from the local catalog, when it knows the session."""
        if self.catalog is None:
            for r in results:
                r["source"] = None
            return
        rows = self.catalog.session_titles([r["session_id"] for r in results])
        for r in results:
            row = rows.get(r["session_id"])
            if row:
                r["title"] = row.get("title") or r.get("title")
                r["first_prompt"] = _snippet(row.get("first_prompt"), 200)
            # transcript | archive (only archived) | history (prompts only); None: not in this catalog
            r["source"] = (row.get("source") or "transcript") if row else None


# Cosines of all-MiniLM-L6-v2 between a query and a text on its topic sit above ~0.5; an
# unrelated text scores ~0.1–0.3. Calibrated on the dev sets (scripts/search_eval.py).
HIGH_COSINE, LOW_COSINE = 0.55, 0.35
# A query whose embedding has at least this cosine with the empty query's is about nothing
# (one-word fillers sit above it, real queries and single real words well below; same dev sets).
EMPTY_COSINE = 0.3
_EMPTY_QUERY: weakref.WeakKeyDictionary[Any, list[float]] = weakref.WeakKeyDictionary()  # model → its empty query


def _mark_exact(exact: dict[str, int], keys: dict[str, dict[str, Any]], sessions: dict[str, _Session]) -> None:
    """Mark the sessions and points of the verbatim matches `exact` (point id → where it starts)."""
    for point_id, at in exact.items():
        meta = keys.get(point_id) or {}
        s = sessions.get(meta.get("session_id"))  # type: ignore[arg-type]  # None finds no session
        if s is not None:
            s.exact = True
            point = s.points[meta.get("content_hash") or point_id]
            point["exact"], point["at"] = True, at


def _grade(exact: bool, coverage: float, best_cosine: float) -> str:
    if exact or (coverage >= 0.75 and best_cosine >= LOW_COSINE) or best_cosine >= HIGH_COSINE:
        return "high"
    if coverage >= 0.5 or best_cosine >= LOW_COSINE:
        return "medium"
    return "low"


def _best_points(s: _Session, tops: tuple[float, float]) -> list[dict[str, Any]]:
    """The session's matches to show: verbatim ones first, then by their own share of the
    relevance."""
    dense_top, lexical_top = tops
    for point in s.points.values():
        point["score"] = LEXICAL_SHARE * point["lexical"] / lexical_top + (1 - LEXICAL_SHARE) * point["dense"] / dense_top
    return sorted(s.points.values(), key=lambda m: (not m.get("exact"), -m["score"]))[:MATCHES_SHOWN]


def _result(sid: str, s: _Session, points: list[dict[str, Any]], payloads: dict[str, dict[str, Any]], score: float,
            relevance: float, now: datetime) -> dict[str, Any]:
    m = s.meta
    ended = m.get("session_ended_at") or m.get("timestamp")
    shown = [(p, payloads.get(p["id"], {})) for p in points]
    return {
        "session_id": sid, "score": round(score, 6), "relevance": round(relevance, 6),
        "exact": s.exact, "repo_name": m.get("repo_name"), "user_name": m.get("user_name"),
        "agent": m.get("agent") or "claude", "timestamp": ended,
        "started_at": m.get("session_started_at"), "age": relative_age(ended, now),
        "title": next((pl.get("title") for _, pl in shown if pl.get("title")), None),
        "_best_dense": max(s.dense, default=0.0),
        "matches": [{"content_type": pl.get("content_type"), "text": _snippet(pl.get("text"), around=p.get("at")),
                     "score": round(p["score"], 6), "turn_index": pl.get("turn_index")} for p, pl in shown],
        "_texts": [searchable(pl.get("content_type"), pl.get("text") or "") for _, pl in shown],
    }


def _content_key(s: _Session, points: list[dict[str, Any]]) -> str | None:
    """The content hash of the session's best match (forks that repeat it collapse into one)."""
    if not points:
        return None
    return next((k for k, p in s.points.items() if p is points[0]), None)


def _snippet(text: str | None, limit: int = SNIPPET_CHARS, around: int | None = None) -> str:
    """The text, whitespace folded, within `limit` characters; from a little before `around`
    (where a verbatim match starts) when the match would not show otherwise."""
    t = " ".join((text or "").split())
    if len(t) <= limit:
        return t
    if around is not None and around > limit // 2:
        start = min(around - limit // 4, len(t) - limit + 1)
        t = "…" + t[start:]
        if len(t) <= limit:
            return t
    return t[:limit - 1] + "…"


_WORKER: ThreadPoolExecutor | None = None


def _worker() -> ThreadPoolExecutor:
    """One thread for work that overlaps a query's own (the query's embedding)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jacked-search")
    return _WORKER


def search_many(settings: Settings, queries: list[str], opts: SearchOptions,
                indexer: Any | None = None) -> list[dict[str, Any]]:
    """Answer several queries with one model load and one store open (`search --batch`)."""
    from jacked.index.indexer import Indexer

    opts.validate()
    for q in queries:
        sanitize_query(q)  # fail before any work on a bad line
    indexer = indexer or Indexer(settings)
    indexer.preload_dense()  # the model loads while the store does (a cold search: ~0.25 s each)
    with indexer.reading_store() as store:
        searcher = Searcher(settings, store, indexer.dense, indexer.sparse, indexer.catalog)
        return [searcher.search(q, opts) for q in queries]
