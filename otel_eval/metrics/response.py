"""Final-response metrics: exact, contains, regex and ROUGE-1.

``rouge1`` reproduces Google's ``rouge-score`` package (``RougeScorer(['rouge1'])``) exactly: its
default tokenizer lower-cases, replaces every character outside ``[a-z0-9]`` by a space and
splits, so non-ASCII letters are dropped just as it drops them. With ``use_stemmer=True`` the
package stems tokens longer than 3 characters with NLTK's Porter stemmer; we use the same
stemmer when NLTK is installed (it comes with ``rouge-score``) and say so clearly when it is not.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_SPACES = re.compile(r"\s+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")

MAX_PATTERN_LENGTH = 2000
"""Regex patterns come from config files; an absurdly long one is refused rather than compiled."""


def normalize(text: str, fold_case: bool = False, fold_whitespace: bool = True) -> str:
    if fold_whitespace:
        text = _SPACES.sub(" ", text).strip()
    if fold_case:
        text = text.casefold()
    return text


def exact_match(reference: str, candidate: Optional[str], fold_case: bool = False, fold_whitespace: bool = True) -> bool:
    """Same text; by default runs of whitespace and surrounding space do not count."""
    if candidate is None:
        return False
    return normalize(reference, fold_case, fold_whitespace) == normalize(candidate, fold_case, fold_whitespace)


def contains(reference: str, candidate: Optional[str], fold_case: bool = True, fold_whitespace: bool = True) -> bool:
    """The reference text occurs in the candidate (case-insensitive by default)."""
    if candidate is None:
        return False
    return normalize(reference, fold_case, fold_whitespace) in normalize(candidate, fold_case, fold_whitespace)


def compile_pattern(pattern: Any, ignore_case: bool = False) -> "re.Pattern[str]":
    """A config-supplied pattern compiled, or ValueError saying what is wrong with it."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("regex pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"regex pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_LENGTH}")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"invalid regex pattern {pattern!r}: {exc}") from None


def regex_match(pattern: Any, candidate: Optional[str], ignore_case: bool = False) -> bool:
    """``re.search`` of the pattern in the candidate. Bad pattern → ValueError."""
    compiled = compile_pattern(pattern, ignore_case)
    return candidate is not None and compiled.search(candidate) is not None


@lru_cache(maxsize=1)
def _porter() -> Any:
    try:
        from nltk.stem import porter
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError(
            "ROUGE with use_stemmer=True needs NLTK's Porter stemmer: pip install nltk (or rouge-score)"
        ) from None
    return porter.PorterStemmer()


def rouge_tokens(text: str, use_stemmer: bool = False) -> list[str]:
    """rouge-score's default tokenizer."""
    text = _NON_ALPHANUM.sub(" ", text.lower())
    tokens = _SPACES.split(text)
    if use_stemmer:
        stemmer = _porter()
        tokens = [stemmer.stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in tokens if _VALID_TOKEN.match(t)]


@dataclass(frozen=True)
class RougeScore:
    precision: float
    recall: float
    fmeasure: float


def rouge1(reference: str, candidate: str, use_stemmer: bool = False) -> RougeScore:
    """Unigram overlap: precision over the candidate's tokens, recall over the reference's."""
    ref = Counter(rouge_tokens(reference, use_stemmer))
    cand = Counter(rouge_tokens(candidate, use_stemmer))
    overlap = sum(min(count, cand[token]) for token, count in ref.items())
    precision = overlap / max(sum(cand.values()), 1)
    recall = overlap / max(sum(ref.values()), 1)
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return RougeScore(precision, recall, f)


def rouge1_f(reference: str, candidate: str, use_stemmer: bool = False) -> float:
    return rouge1(reference, candidate, use_stemmer).fmeasure
