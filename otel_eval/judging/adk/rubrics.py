"""What google-adk's rubric-based metrics share (``evaluation/rubric_based_evaluator.py``), as pure
functions: which rubrics apply, how the judge's text answer becomes per-rubric verdicts, the
majority vote over samples, and the mean over invocations.

The judge answers each rubric ("property") in blocks of ``ID:`` / ``Property:`` / ``Rationale:``
/ ``Verdict:`` lines. A verdict containing "yes" scores 1, else one containing "no" scores 0,
else nothing. An answer whose Property, Rationale and Verdict lines do not pair up is discarded
whole (ADK: a partial parse could drop a failed rubric and inflate the score). A block is matched
to its rubric by id, else by the property text (normalised as ADK does). An invocation's score is
the mean of its rubrics' verdicts (after a per-rubric majority vote over the samples, a tie
counting as "no"); the metric's score is the mean of every rubric verdict of every invocation.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .invocation import JudgeRubric
from .results import Evaluation, PerInvocation, eval_status

FINAL_RESPONSE_QUALITY = "FINAL_RESPONSE_QUALITY"
TOOL_USE_QUALITY = "TOOL_USE_QUALITY"
TRAJECTORY_QUALITY = "TRAJECTORY_QUALITY"
"""The rubric ``type`` each metric takes from an invocation's (or case's) rubrics."""

AGGREGATED_RATIONALE = (
    "This is an aggregated score derived from individual entries. Please refer to individual "
    "entries in each invocation for actual rationale from the model."
)

_ID = re.compile(r"(?m)^\s*ID: (.*)$")
_PROPERTY = re.compile(r"(?m)^\s*Property: (.*)$")
_RATIONALE = re.compile(r"(?<=Rationale: )(.*)")
_VERDICT = re.compile(r"(?<=Verdict: )(.*)")


@dataclass
class RubricResponse:
    """One rubric block of a judge's answer: the property it answers, why, and its verdict as a score
    (None when the verdict said neither yes nor no)."""

    rubric_id: str | None
    property_text: str
    rationale: str
    score: float | None


@dataclass
class RubricScore:
    """One rubric's verdict for an invocation after the vote over samples, as the details show it."""

    rubric_id: str
    score: float | None
    rationale: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The verdict as stored in the details: "yes"/"no" beside the score, the rationale when given."""
        verdict = "yes" if self.score == 1.0 else "no" if self.score is not None else None
        out: dict[str, Any] = {"rubric_id": self.rubric_id, "verdict": verdict, "score": self.score}
        if self.rationale is not None:
            out["rationale"] = self.rationale
        return out


def effective_rubrics(
    criterion_rubrics: Sequence[JudgeRubric], invocation_rubrics: Sequence[JudgeRubric] | None, rubric_type: str | None
) -> list[JudgeRubric]:
    """``create_effective_rubrics_list``: the criterion's rubrics, then the invocation's of this
    metric's type. A rubric id given twice, or no rubric at all, is an error (ADK's ValueError,
    which leaves the metric NOT_EVALUATED)."""
    by_id: dict[str, JudgeRubric] = {}

    def add(rubrics: Sequence[JudgeRubric], scope: str) -> None:
        for r in rubrics:
            if r.rubric_id in by_id:
                raise ValueError(
                    f"Rubric with rubric_id '{r.rubric_id}' already exists. Rubric defined in {scope} "
                    "conflicts with an existing rubric."
                )
            by_id[r.rubric_id] = r

    add(criterion_rubrics, "criterion")
    if invocation_rubrics:
        add([r for r in invocation_rubrics if not rubric_type or r.type == rubric_type], "invocation")
    if not by_id:
        raise ValueError("Rubrics are required.")
    return list(by_id.values())


def properties_text(rubrics: Sequence[JudgeRubric]) -> str:
    """The ``<properties>`` block of the final-response and tool-use prompts."""
    return "\n".join(f"*  [id: {r.rubric_id}] {r.text}" for r in rubrics)


_SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_DECORATION = " *_`#>-\u2022\"'"
_WHITESPACE = re.compile(r"\s+")


def normalize_text(text: object) -> str:
    """``_normalize_text``: how an echoed property is matched to its rubric (markdown and smart
    quotes off, whitespace folded, lower case)."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_SMART)
    return _WHITESPACE.sub(" ", text).strip(_DECORATION).lower()


def parse(answer: str) -> list[RubricResponse]:
    """``DefaultAutoRaterResponseParser.parse``."""
    properties = list(_PROPERTY.finditer(answer))
    ids = list(_ID.finditer(answer))
    rationales = _RATIONALE.findall(answer)
    scores: list[float | None] = []
    for verdict in _VERDICT.findall(answer):
        lowered = verdict.lower()
        scores.append(1.0 if "yes" in lowered else 0.0 if "no" in lowered else None)
    if not len(properties) == len(rationales) == len(scores):
        return []
    out = []
    for i, (prop, rationale, score) in enumerate(zip(properties, rationales, scores)):
        previous = properties[i - 1].start() if i > 0 else -1
        rubric_id = None
        for id_match in ids:
            if previous < id_match.start() < prop.start():
                rubric_id = id_match.group(1).strip() or None
        out.append(RubricResponse(rubric_id, prop.group(1).strip(), rationale.strip(), score))
    return out


def mean_score(scores: Sequence[RubricScore]) -> float | None:
    """``get_average_rubric_score``: the mean of the verdicts that have a score (``statistics.mean``,
    as ADK computes it), None when none has."""
    values = [s.score for s in scores if s.score is not None]
    return statistics.mean(values) if values else None


def sample_scores(answer: str | None, rubrics: Sequence[JudgeRubric]) -> tuple[float | None, list[RubricScore]]:
    """``convert_auto_rater_response_to_score``: the answer's verdicts on the rubrics asked about
    (blocks naming another rubric are dropped), and their mean."""
    responses = parse(answer) if answer else []
    by_text = {normalize_text(r.text): r for r in rubrics}
    by_id = {r.rubric_id: r for r in rubrics}
    found = []
    for response in responses:
        rubric = by_id.get(response.rubric_id) if response.rubric_id else None
        if rubric is None:
            rubric = by_text.get(normalize_text(response.property_text))
        if rubric is not None:
            found.append(RubricScore(rubric.rubric_id, response.score, response.rationale))
    return mean_score(found), found


def majority(samples: Sequence[Sequence[RubricScore]]) -> list[RubricScore]:
    """``MajorityVotePerInvocationResultsAggregator``: per rubric, the first "yes" when the yeses
    outnumber the noes, else the first "no"; a rubric no sample scored keeps its first verdict."""
    buckets: dict[str, tuple[list[RubricScore], list[RubricScore], list[RubricScore]]] = {}
    for sample in samples:
        for score in sample or ():
            none, yes, no = buckets.setdefault(score.rubric_id, ([], [], []))
            (none if score.score is None else yes if score.score == 1.0 else no).append(score)
    out = []
    for none, yes, no in buckets.values():
        if not yes and not no:
            out.append(none[0])
        elif len(yes) > len(no):
            out.append(yes[0])
        else:
            out.append(no[0])
    return out


def spread(samples: Sequence[Sequence[RubricScore]]) -> dict[str, dict[str, int]]:
    """Per rubric, how many samples said yes, no, or nothing readable: the samples' spread."""
    out: dict[str, dict[str, int]] = {}
    for sample in samples:
        for score in sample or ():
            counts = out.setdefault(score.rubric_id, {"yes": 0, "no": 0, "none": 0})
            counts["yes" if score.score == 1.0 else "no" if score.score is not None else "none"] += 1
    return out


def evaluate_invocation(
    turn: int,
    invocation_id: str | None,
    answers: Sequence[str | None],
    rubrics: Sequence[JudgeRubric],
    threshold: float,
) -> PerInvocation:
    """One invocation from its samples' answers."""
    samples = [sample_scores(a, rubrics) for a in answers]
    verdicts = majority([s for _, s in samples])
    score = mean_score(verdicts)
    return PerInvocation(
        turn,
        invocation_id,
        score,
        eval_status(score, threshold),
        {
            "rubrics": [v.to_json() for v in verdicts],
            "samples": [{"score": s, "verdicts": {v.rubric_id: v.score for v in vs}} for s, vs in samples],
            "spread": spread([s for _, s in samples]),
            "_verdicts": verdicts,
        },
    )


def summarize(per_invocation: list[PerInvocation], threshold: float) -> Evaluation:
    """``MeanInvocationResultsSummarizer``: the mean of every rubric verdict of every invocation;
    per rubric, its mean over the invocations."""
    every: list[RubricScore] = []
    by_id: dict[str, list[RubricScore]] = {}
    for result in per_invocation:
        for verdict in result.details.pop("_verdicts", None) or ():
            by_id.setdefault(verdict.rubric_id, []).append(verdict)
            every.append(verdict)
    overall = mean_score(every)
    rubric_means = [{"rubric_id": rid, "score": mean_score(scores)} for rid, scores in by_id.items()]
    return Evaluation(overall, eval_status(overall, threshold), per_invocation, {"rubrics": rubric_means})
