"""Offline text embeddings for matching a session's query to a golden case by meaning.

No model is downloaded: the default is a TF-IDF vector over word unigrams and character n-grams
taken inside word boundaries (3–5 characters, like scikit-learn's ``char_wb``), with the IDF
fitted on the golden queries. Character n-grams carry morphology ("forecasts" ~ "forecast",
"revenue" ~ "revenues") and survive typos; the IDF makes words every case shares ("what", "the",
"weather") count little, so the words that tell cases apart ("tokyo", "refund") dominate.
Pure Python on sparse dicts: for queries of a few dozen characters this is faster than dense
arrays and needs no numpy.

A real model can be plugged in instead: any ``embed(texts: list[str]) -> list[list[float]]``
(sentence-transformers' ``model.encode``, ...). :class:`OpenAIEmbeddings` is one for any server
that speaks OpenAI's ``POST /v1/embeddings`` (OpenAI, a local Ollama, vLLM,
text-embeddings-inference): texts are cached by hash, requests time out and are retried with
backoff, and a failure is an :class:`EmbeddingError` that the matcher records in the match
evidence (the fuzzy step's result stands) instead of failing the session.
:func:`hashed_ngram_embed` is such a callable too — stateless, fixed dimension — for places
that want dense vectors without fitting.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from .text import normalize_query, query_words

#: A user-supplied embedding function: texts → one dense vector per text.
EmbedFunction = Callable[[list[str]], list[list[float]]]
SparseVector = dict[str, float]

#: Character n-gram sizes. 3 keeps short words (“sql”, “pto”) represented; 5 captures stems.
DEFAULT_NGRAMS = (3, 5)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def text_features(text: str, ngrams: tuple[int, int] = DEFAULT_NGRAMS) -> Counter:
    """Term counts of a text: ``w:word`` for each word and ``c:ngram`` for each character n-gram
    of `` word `` (padded, so prefixes and suffixes are features of their own)."""
    counts: Counter = Counter()
    low, high = ngrams
    for word in query_words(normalize_query(text)):
        counts["w:" + word] += 1
        padded = f" {word} "
        for n in range(low, high + 1):
            if len(padded) < n:
                break
            for start in range(len(padded) - n + 1):
                counts["c:" + padded[start : start + n]] += 1
    return counts


def numbers_in(text: str | None) -> list[str]:
    """The numbers a text mentions, sorted ("top 10 users for 2024" → ['10', '2024'])."""
    return sorted(_NUMBER.findall(normalize_query(text)))


class TfidfEmbedder:
    """TF-IDF over :func:`text_features`, fitted on a corpus (the golden queries).

    ``tf`` is sublinear (1 + log count) so a repeated word does not drown the others; ``idf`` is
    the smoothed ``log((1 + N) / (1 + df)) + 1``. A feature no golden query has gets the largest
    IDF: it cannot add to any similarity, but it does lengthen the query's vector, so a query that
    is mostly about something else ("weather in Lima" against "weather in Tokyo") scores low.
    """

    name = "tfidf-char-ngrams"

    def __init__(self, ngrams: tuple[int, int] = DEFAULT_NGRAMS):
        self.ngrams = ngrams
        self.idf: dict[str, float] = {}
        self.unseen_idf = 1.0

    def fit(self, corpus: Sequence[str]) -> TfidfEmbedder:
        """Learns each feature's IDF from ``corpus`` (the golden queries); returns the embedder, fitted."""
        documents = len(corpus)
        frequency: Counter = Counter()
        for text in corpus:
            frequency.update(set(text_features(text, self.ngrams)))
        self.idf = {f: math.log((1 + documents) / (1 + df)) + 1.0 for f, df in frequency.items()}
        self.unseen_idf = math.log(1 + documents) + 1.0
        return self

    def vector(self, text: str) -> SparseVector:
        """The text's unit-length TF-IDF vector, so the cosine of two vectors is their dot product."""
        weights = {
            f: (1.0 + math.log(c)) * self.idf.get(f, self.unseen_idf)
            for f, c in text_features(text, self.ngrams).items()
        }
        return normalized(weights)

    def vectors(self, texts: Sequence[str]) -> list[SparseVector]:
        """:meth:`vector` of each text, in order."""
        return [self.vector(t) for t in texts]


def normalized(weights: Mapping[str, float]) -> SparseVector:
    """The vector scaled to unit length (empty for a zero vector), so cosines are dot products."""
    norm = math.sqrt(sum(w * w for w in weights.values()))
    return {f: w / norm for f, w in weights.items()} if norm else {}


def sparse_cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine of two L2-normalised sparse vectors (their dot product)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b.get(f, 0.0) for f, w in a.items())


def dense_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two dense vectors; 0.0 when either is all zeros."""
    if len(a) != len(b):
        raise ValueError(f"embedding vectors differ in length ({len(a)} and {len(b)})")
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def hashed_ngram_embed(
    texts: list[str], dim: int = 1024, ngrams: tuple[int, int] = DEFAULT_NGRAMS
) -> list[list[float]]:
    """Dense, L2-normalised hashed-feature vectors (no IDF, no fitting): an ``embed`` callable.

    Features are hashed with CRC-32 (stable across processes, unlike ``hash()``), the sign taken
    from another bit so collisions cancel on average instead of piling up.
    """
    out: list[list[float]] = []
    for text in texts:
        vector = [0.0] * dim
        for feature, count in text_features(text, ngrams).items():
            h = zlib.crc32(feature.encode("utf-8"))
            vector[h % dim] += (1.0 + math.log(count)) * (1.0 if (h >> 31) & 1 == 0 else -1.0)
        norm = math.sqrt(sum(x * x for x in vector))
        out.append([x / norm for x in vector] if norm else vector)
    return out


class EmbeddingError(RuntimeError):
    """An embedding backend could not embed the texts (unreachable, timed out, HTTP error, an
    answer that is not embeddings). The message says which backend and what went wrong."""


#: Answers worth another try: rate limited, or the server (or a proxy before it) is unwell.
_RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class OpenAIEmbeddings:
    """An ``embed`` callable backed by an OpenAI-compatible ``POST <base_url>/embeddings``.

    ``base_url`` is what the OpenAI SDK calls it (``https://api.openai.com/v1``,
    ``http://127.0.0.1:11434/v1`` for Ollama, ``http://127.0.0.1:8000/v1`` for vLLM); a bare
    ``http://host:port`` gets ``/v1``. Each text's vector is cached by SHA-256 of model and text,
    so golden queries are embedded once and a repeated session query costs nothing. A request
    that times out or gets 408/429/5xx is retried ``retries`` times with exponential ``backoff``;
    any failure raises :class:`EmbeddingError`. Picklable (score worker processes get a copy, with
    their own cache).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.5,
        batch_size: int = 128,
        max_cache: int = 50_000,
    ):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"embedding URL must be http(s)://HOST[:PORT][/v1], got {base_url!r}")
        if not model:
            raise ValueError("an embedding model name is required (e.g. nomic-embed-text, text-embedding-3-small)")
        base = base_url.rstrip("/")
        self.base_url = base if parts.path not in ("", "/") else base + "/v1"
        self.url = self.base_url + "/embeddings"
        self.model = model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.batch_size = int(batch_size)
        self.max_cache = int(max_cache)
        self.requests = 0
        """HTTP requests sent (tries included)."""
        self._cache: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The model and endpoint, as a match's evidence names the embedding that scored it."""
        return f"{self.model} ({self.url})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if self._key(t) not in self._cache))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            vectors = self._request(batch)
            with self._lock:
                if len(self._cache) + len(batch) > self.max_cache:
                    self._cache.clear()  # rare; golden queries are embedded again on next use
                for text, vector in zip(batch, vectors):
                    self._cache[self._key(text)] = vector
        with self._lock:
            return [self._cache[self._key(t)] for t in texts]

    def _request(self, batch: list[str]) -> list[list[float]]:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {"model": self.model, "input": batch}
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            self.requests += 1
            try:
                response = httpx.post(self.url, json=body, headers=headers, timeout=self.timeout)
            except httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g} s"
                continue
            except httpx.HTTPError as exc:
                problem = f"cannot connect ({type(exc).__name__}: {exc})"
                continue
            if response.status_code in _RETRYABLE_STATUS:
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 300:  # auth, unknown model, bad request: trying again cannot help
                raise EmbeddingError(f"{self.url}: HTTP {response.status_code}: {response.text[:200]}")
            return self._vectors(response.content, len(batch))
        raise EmbeddingError(f"{self.url}: {problem} (after {self.retries + 1} attempt(s))")

    def _vectors(self, content: bytes, count: int) -> list[list[float]]:
        """The embeddings of an OpenAI ``{"data": [{"index", "embedding"}]}`` answer, in input order."""

        def bad(why: str) -> EmbeddingError:
            return EmbeddingError(f"{self.url}: the answer is not OpenAI embeddings: {why}")

        try:
            answer = json.loads(content)
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad(f"invalid JSON ({exc}): {content[:100]!r}") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise bad("no 'data' list")
        if len(data) != count:
            raise bad(f"{len(data)} embedding(s) for {count} text(s)")
        ordered: list[list[float] | None] = [None] * count
        for n, item in enumerate(data):
            index = item.get("index", n) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or ordered[index] is not None:
                raise bad(f"data[{n}].index is {index!r}")
            if (
                not isinstance(vector, list)
                or not vector
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector)
            ):
                raise bad(f"data[{n}].embedding is not a list of numbers")
            ordered[index] = [float(x) for x in vector]
        if len({len(v) for v in ordered if v is not None}) > 1:
            raise bad("the embeddings differ in length")
        return [v for v in ordered if v is not None]


class EmbeddingScorer:
    """Similarity (0–1) of a query to each golden query, with the built-in TF-IDF embedding or a
    user's ``embed`` callable. Golden queries are embedded once, on first use."""

    def __init__(self, corpus: Sequence[str], embed: EmbedFunction | None = None):
        self.corpus = list(corpus)
        self.embed = embed
        self.model = (
            getattr(embed, "model_name", None) or getattr(embed, "__name__", type(embed).__name__)
            if embed is not None
            else TfidfEmbedder.name
        )
        self._tfidf: TfidfEmbedder | None = None
        self._sparse: list[SparseVector] = []
        self._dense: list[list[float]] = []
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        if self.embed is None:
            self._tfidf = TfidfEmbedder().fit(self.corpus)
            self._sparse = self._tfidf.vectors(self.corpus)
        else:
            self._dense = self._call_embed(self.corpus)
        self._ready = True

    def _call_embed(self, texts: list[str]) -> list[list[float]]:
        assert self.embed is not None
        try:
            vectors = list(self.embed(list(texts)))
        except EmbeddingError:
            raise
        except Exception as exc:  # a user's embed function: its failure is the step's, not the session's
            raise EmbeddingError(f"{self.model}: {type(exc).__name__}: {exc}") from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"{self.model}: returned {len(vectors)} vectors for {len(texts)} texts")
        return [list(map(float, v)) for v in vectors]

    def similarities(self, query: str) -> list[float]:
        """One similarity per corpus entry, in corpus order. Raises :class:`EmbeddingError` when a
        user-supplied or remote embedding fails (the next call tries again)."""
        if not self.corpus:
            return []
        self._prepare()
        if self._tfidf is not None:
            q = self._tfidf.vector(query)
            return [sparse_cosine(q, v) for v in self._sparse]
        q_dense = self._call_embed([query])[0]
        try:
            return [dense_cosine(q_dense, v) for v in self._dense]
        except ValueError as exc:  # the model's dimension changed between calls
            raise EmbeddingError(f"{self.model}: {exc}") from None
