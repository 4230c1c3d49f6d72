"""The read side: every question a view asks of an otel-eval database, answered in one place.

``report``, ``watch``, ``ui``, ``inspect``, ``export``, ``rescore``, ``compare`` and the alert
monitor are views over these modules; none of them opens the file or writes SQL itself.

* :mod:`.database`: opening a file read-only (the one helper), migrating an older schema first;
* :mod:`.times`: ``--since`` (:func:`~.times.parse_since`) and the store's time format;
* :mod:`.evaluations`: each session's current evaluation with its criteria, revisions, outcomes;
* :mod:`.sessions`: the filtered, paged session list, one session's overview, which sessions
  ``export`` and ``rescore`` take;
* :mod:`.spans`: a session's stored spans as trees, AgentData rows and turns;
* :mod:`.backlog`: what is not scored yet and when it will be;
* :mod:`.feed`: new evaluations, incrementally (``watch`` and the alert monitor follow it).

Rows come back typed (frozen dataclasses and named tuples, e.g.
:class:`~.evaluations.StoredEvaluation`, :class:`~.sessions.SessionOverview`), never as dicts;
where a view prints JSON (``--json``, the dashboard's API), the row's ``to_dict()`` is that shape.

The writer (:mod:`otel_eval.engine`) is the only code that writes; these modules only read, on
connections SQLite itself keeps read-only.
"""
