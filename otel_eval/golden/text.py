"""How golden and session queries are compared word by word: the normal form both are matched
in, their words, and which words of one have no counterpart in the other (the matcher's word
guard). Shared by the fuzzy matcher and the embedding features, so it imports neither."""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz import fuzz

#: Word-level similarity (rapidfuzz ratio, 0–100) at which two words count as the same word.
WORD_SIMILARITY = 80.0
#: Words shorter than this, and words with digits, must be identical ("in"/"on", "10"/"100").
MIN_FUZZY_WORD = 4

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
    }
)
_SPACES = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.!?\u2026\u3002\uff1f\uff01]+$")
_WORD = re.compile(r"\w+")


def normalize_query(text: str | None) -> str:
    """The form queries are compared in: Unicode NFKC, typographic quotes → ASCII, case-folded,
    whitespace runs → one space, trimmed, trailing sentence punctuation (. ! ? … 。？！) removed.

    "What’s the weather in  Tokyo?" and "what's the weather in tokyo" normalise alike; inner
    punctuation is kept ("2+2" is not "22").
    """
    if not text:
        return ""
    # NFKC again after case-folding: folding can yield decomposed forms, and the result must be
    # stable under a second normalisation (the exact index is keyed by it).
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold())
    text = _SPACES.sub(" ", text).strip()
    return _TRAILING_PUNCT.sub("", text)


def query_words(normalized: str) -> list[str]:
    """Words for the word guard; apostrophes are dropped so "what's" and "whats" are one word."""
    return _WORD.findall(normalized.replace("'", ""))


def differing_words(a: str, b: str) -> tuple[list[str], list[str]]:
    """Words of ``a`` and of ``b`` without a counterpart on the other side (see the word guard)."""
    left, right = query_words(a), query_words(b)
    remaining = list(right)
    unpaired: list[str] = []
    for word in left:  # identical words first, so a near-miss never takes an exact partner
        if word in remaining:
            remaining.remove(word)
        else:
            unpaired.append(word)
    still: list[str] = []
    for word in unpaired:
        best, best_score = None, 0.0
        if fuzzy_word(word):
            for other in remaining:
                if fuzzy_word(other):
                    score = fuzz.ratio(word, other)
                    if score >= WORD_SIMILARITY and score > best_score:
                        best, best_score = other, score
        if best is None:
            still.append(word)
        else:
            remaining.remove(best)
    return still, remaining


def fuzzy_word(word: str) -> bool:
    """Whether a word may be matched approximately: long enough for a typo to be one, and without
    digits (a different number is a different request, never a typo)."""
    return len(word) >= MIN_FUZZY_WORD and not any(ch.isdigit() for ch in word)
