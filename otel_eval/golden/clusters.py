"""Clusters of user queries no golden case describes: the raw material of suggested cases.

Queries are grouped by meaning with the same offline embedding the matcher's embedding step uses
(TF-IDF over word and character n-grams, here fitted on the queries being clustered, so words
every query shares count little) or with a model's vectors (``embed``). The algorithm is a
deterministic leader clustering: distinct queries, most sessions first, each joins the most
similar existing cluster's leader when the cosine reaches ``similarity``, else leads a new one.
A cluster's representative is its medoid: the query most similar to the others, weighted by how
many sessions asked each. Pure: no I/O, no randomness, the same input gives the same clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .embedding import TfidfEmbedder, dense_cosine, sparse_cosine

DEFAULT_SIMILARITY = 0.5
"""Cosine at which a query joins a cluster: paraphrases of one request ("show the top 10 users by
revenue" / "top ten users ranked by revenue") reach it; requests that share only their frame
("weather in Paris" / "weather in Lima") do not, since the words that differ carry the IDF."""

Embed = Callable[[list[str]], list[list[float]]]


@dataclass
class Cluster:
    """One group of unmatched user queries that ask the same thing: the raw material of one
    suggested golden case, its representative the case's query."""

    queries: list[str]
    """Distinct queries, most sessions first."""
    weights: list[int]
    """Sessions per query, in the same order."""
    representative: str = ""
    members: list[int] = field(default_factory=list, repr=False)
    """Indexes of the queries in the input, in the same order as ``queries``."""

    @property
    def sessions(self) -> int:
        """How many sessions asked one of the cluster's queries: a cluster below ``min_sessions``
        suggests no case."""
        return sum(self.weights)


def cluster_queries(
    queries: Sequence[str],
    weights: Sequence[int],
    similarity: float = DEFAULT_SIMILARITY,
    embed: Embed | None = None,
) -> list[Cluster]:
    """Distinct ``queries`` (``weights[i]`` sessions asked ``queries[i]``) grouped by meaning,
    most sessions first. ``embed``: a model's vectors instead of the offline n-grams."""
    if len(queries) != len(weights):
        raise ValueError("queries and weights differ in length")
    order = sorted(range(len(queries)), key=lambda i: (-weights[i], queries[i]))
    if embed is not None:
        dense = embed([queries[i] for i in order])
        vectors: dict[int, object] = dict(zip(order, dense))
        cosine: Callable[[object, object], float] = dense_cosine  # type: ignore[assignment]
    else:
        embedder = TfidfEmbedder().fit(list(queries))
        vectors = {i: embedder.vector(queries[i]) for i in order}
        cosine = sparse_cosine  # type: ignore[assignment]
    leaders: list[int] = []
    groups: list[list[int]] = []
    for i in order:
        best, best_similarity = -1, similarity
        for n, leader in enumerate(leaders):
            s = cosine(vectors[i], vectors[leader])
            if s >= best_similarity:
                best, best_similarity = n, s
        if best < 0:
            leaders.append(i)
            groups.append([i])
        else:
            groups[best].append(i)
    clusters = []
    for members in groups:
        # The medoid: the member with the greatest session-weighted similarity to the others.
        def centrality(i: int, members: list[int] = members) -> float:
            return sum(weights[j] * cosine(vectors[i], vectors[j]) for j in members)

        medoid = max(members, key=lambda i: (centrality(i), weights[i], -members.index(i)))
        clusters.append(
            Cluster(
                queries=[queries[i] for i in members],
                weights=[weights[i] for i in members],
                representative=queries[medoid],
                members=list(members),
            )
        )
    clusters.sort(key=lambda c: (-c.sessions, c.representative))
    return clusters
