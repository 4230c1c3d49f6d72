"""Final-response metrics: exact, contains, regex and two ROUGE-1s.

``rouge1`` reproduces Google's ``rouge-score`` package (``RougeScorer(['rouge1'])``) exactly: its
default tokenizer lower-cases, replaces every character outside ``[a-z0-9]`` by a space and
splits, so non-ASCII letters are dropped just as it drops them. With ``use_stemmer=True`` the
package stems tokens longer than 3 characters with NLTK's Porter stemmer, and so do we (NLTK is a
runtime dependency).

``adk_rouge1`` reproduces google-adk's ``response_match_score`` (``RougeEvaluator`` in
``google/adk/evaluation/final_response_match_v1.py``): the same ROUGE-1, always stemmed, over
ADK's Unicode-aware tokens, so accented, CJK and Thai text score as ADK scores them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_ALPHANUM_RUN = re.compile(r"[a-z0-9]+")
_SPACES = re.compile(r"\s+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")

MAX_PATTERN_LENGTH = 2000
"""Regex patterns come from config files; an absurdly long one is refused rather than compiled."""


def normalize(text: str, fold_case: bool = False, fold_whitespace: bool = True) -> str:
    """The text as responses are compared: runs of whitespace as one space, trimmed, and with
    ``fold_case`` case-folded, so layout and case need not decide a match."""
    if fold_whitespace:
        text = _SPACES.sub(" ", text).strip()
    if fold_case:
        text = text.casefold()
    return text


def exact_match(reference: str, candidate: str | None, fold_case: bool = False, fold_whitespace: bool = True) -> bool:
    """Same text; by default runs of whitespace and surrounding space do not count."""
    if candidate is None:
        return False
    return normalize(reference, fold_case, fold_whitespace) == normalize(candidate, fold_case, fold_whitespace)


def contains(reference: str, candidate: str | None, fold_case: bool = True, fold_whitespace: bool = True) -> bool:
    """The reference text occurs in the candidate (case-insensitive by default)."""
    if candidate is None:
        return False
    return normalize(reference, fold_case, fold_whitespace) in normalize(candidate, fold_case, fold_whitespace)


def compile_pattern(pattern: Any, ignore_case: bool = False) -> re.Pattern[str]:
    """A config-supplied pattern compiled, or ValueError saying what is wrong with it."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("regex pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"regex pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_LENGTH}")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"invalid regex pattern {pattern!r}: {exc}") from None


def regex_match(pattern: Any, candidate: str | None, ignore_case: bool = False) -> bool:
    """``re.search`` of the pattern in the candidate. Bad pattern → ValueError."""
    compiled = compile_pattern(pattern, ignore_case)
    return candidate is not None and compiled.search(candidate) is not None


@lru_cache(maxsize=1)
def _porter() -> Any:
    # Imported on first use: loading NLTK costs more than most sessions spend scoring.
    from nltk.stem import porter

    return porter.PorterStemmer()


def rouge_tokens(text: str, use_stemmer: bool = False) -> list[str]:
    """rouge-score's default tokenizer."""
    if not use_stemmer:
        # Replacing the other characters by spaces and splitting leaves exactly the [a-z0-9] runs.
        return _ALPHANUM_RUN.findall(text.lower())
    text = _NON_ALPHANUM.sub(" ", text.lower())
    stemmer = _porter()
    tokens = [stemmer.stem(t) if len(t) > 3 else t for t in _SPACES.split(text)]
    return [t for t in tokens if _VALID_TOKEN.match(t)]


@dataclass(frozen=True)
class RougeScore:
    """ROUGE-1 of a candidate against a reference, the three numbers rouge-score's ``Score`` holds."""

    precision: float
    recall: float
    fmeasure: float


def rouge1(reference: str, candidate: str, use_stemmer: bool = False) -> RougeScore:
    """Unigram overlap: precision over the candidate's tokens, recall over the reference's."""
    return _unigram_overlap(rouge_tokens(reference, use_stemmer), rouge_tokens(candidate, use_stemmer))


def _unigram_overlap(reference_tokens: list[str], candidate_tokens: list[str]) -> RougeScore:
    # overlap = sum over tokens of min(reference count, candidate count): each reference token
    # takes one of the candidate's copies while any are left (cheaper than two Counters).
    left: dict[str, int] = {}
    for token in candidate_tokens:
        left[token] = left.get(token, 0) + 1
    overlap = 0
    for token in reference_tokens:
        n = left.get(token)
        if n:
            left[token] = n - 1
            overlap += 1
    precision = overlap / max(len(candidate_tokens), 1)
    recall = overlap / max(len(reference_tokens), 1)
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return RougeScore(precision, recall, f)


def rouge1_f(reference: str, candidate: str, use_stemmer: bool = False) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``: the one number a response-match
    criterion compares with its threshold."""
    return rouge1(reference, candidate, use_stemmer).fmeasure


# --- google-adk's response_match_score --------------------------------------------------------


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0x3040 <= code <= 0x309F  # Hiragana
        or 0x30A0 <= code <= 0x30FF  # Katakana
        or 0xAC00 <= code <= 0xD7AF
    )  # Hangul Syllables


def _is_non_spaced_script(char: str) -> bool:
    code = ord(char)
    return (
        0x0E00 <= code <= 0x0E7F  # Thai
        or 0x0E80 <= code <= 0x0EFF  # Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F
    )  # Myanmar


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def adk_tokens(text: str) -> list[str]:
    """google-adk's ``_UnicodeAwareTokenizer(use_stemmer=True)``: NFKC and lower-case; each CJK
    character is a token; Thai, Lao, Khmer and Myanmar split into grapheme clusters (a base
    character with its combining marks); other runs of letters, digits and marks are words. An
    all-ASCII word goes through rouge-score's tokenizer with Porter stemming; any other word is
    kept as it is."""
    text = unicodedata.normalize("NFKC", text).lower()
    chars: list[str] = []
    for char in text:
        if _is_cjk(char):
            chars.extend((" ", char, " "))
        elif _is_non_spaced_script(char):
            # A combining mark stays on its base character; a base character starts a cluster.
            chars.append(char if _is_mark(char) else " " + char)
        elif char.isalnum() or _is_mark(char):
            chars.append(char)
        else:
            chars.append(" ")
    tokens: list[str] = []
    for word in "".join(chars).split():
        if word.isascii():
            tokens.extend(rouge_tokens(word, use_stemmer=True))
        else:
            tokens.append(word)
    return tokens


def adk_rouge1(reference: str, candidate: str) -> RougeScore:
    """ROUGE-1 as google-adk's ``response_match_score`` computes it for one invocation."""
    return _unigram_overlap(adk_tokens(reference), adk_tokens(candidate))
