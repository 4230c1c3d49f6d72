"""Offline text embeddings for matching a session's query to a golden case by meaning.

No model is downloaded: the default is a TF-IDF vector over word unigrams and character n-grams
taken inside word boundaries (3–5 characters, like scikit-learn's ``char_wb``), with the IDF
fitted on the golden queries. Character n-grams carry morphology ("forecasts" ~ "forecast",
"revenue" ~ "revenues") and survive typos; the IDF makes words every case shares ("what", "the",
"weather") count little, so the words that tell cases apart ("tokyo", "refund") dominate.
Pure Python on sparse dicts: for queries of a few dozen characters this is faster than dense
arrays and needs no numpy.

A real model can be plugged in instead: any ``embed(texts: list[str]) -> list[list[float]]``
(sentence-transformers' ``model.encode``, an OpenAI-compatible embeddings client, ...).
:func:`hashed_ngram_embed` is such a callable too — stateless, fixed dimension — for places
that want dense vectors without fitting.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from typing import Callable, Mapping, Optional, Sequence

from .matcher import normalize_query, query_words

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


def numbers_in(text: Optional[str]) -> list[str]:
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

    def fit(self, corpus: Sequence[str]) -> "TfidfEmbedder":
        documents = len(corpus)
        frequency: Counter = Counter()
        for text in corpus:
            frequency.update(set(text_features(text, self.ngrams)))
        self.idf = {f: math.log((1 + documents) / (1 + df)) + 1.0 for f, df in frequency.items()}
        self.unseen_idf = math.log(1 + documents) + 1.0
        return self

    def vector(self, text: str) -> SparseVector:
        weights = {f: (1.0 + math.log(c)) * self.idf.get(f, self.unseen_idf)
                   for f, c in text_features(text, self.ngrams).items()}
        return normalized(weights)

    def vectors(self, texts: Sequence[str]) -> list[SparseVector]:
        return [self.vector(t) for t in texts]


def normalized(weights: Mapping[str, float]) -> SparseVector:
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


def hashed_ngram_embed(texts: list[str], dim: int = 1024, ngrams: tuple[int, int] = DEFAULT_NGRAMS) -> list[list[float]]:
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


class EmbeddingScorer:
    """Similarity (0–1) of a query to each golden query, with the built-in TF-IDF embedding or a
    user's ``embed`` callable. Golden queries are embedded once, on first use."""

    def __init__(self, corpus: Sequence[str], embed: Optional[EmbedFunction] = None):
        self.corpus = list(corpus)
        self.embed = embed
        self.model = getattr(embed, "__name__", type(embed).__name__) if embed is not None else TfidfEmbedder.name
        self._tfidf: Optional[TfidfEmbedder] = None
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
        vectors = list(self.embed(list(texts)))
        if len(vectors) != len(texts):
            raise ValueError(f"embed returned {len(vectors)} vectors for {len(texts)} texts")
        return [list(map(float, v)) for v in vectors]

    def similarities(self, query: str) -> list[float]:
        """One similarity per corpus entry, in corpus order."""
        if not self.corpus:
            return []
        self._prepare()
        if self._tfidf is not None:
            q = self._tfidf.vector(query)
            return [sparse_cosine(q, v) for v in self._sparse]
        q_dense = self._call_embed([query])[0]
        return [dense_cosine(q_dense, v) for v in self._dense]
