"""The judge pool: LLM judge criteria answered off the score workers (DESIGN.md §7, issue 30).

A session's deterministic criteria are stored at once; each judge criterion is stored *pending*
and its session gets a later revision when the judge answers, or says why there is no answer.

    selection.py  pure: sampling by a hash of the session id, ``when`` filters, judge options
    breaker.py    pure: the circuit breaker's state transitions (clock injected)
    budget.py     pure: calls and tokens per hour and per day (clock injected)
    context.py    what the judge sees: the turn, the reference, the tool trajectory (bounded)
    jobs.py       a judge job (plain data, stored with the pending evaluation) and its outcome
    client.py     a small asyncio HTTP/1.1 client with keep-alive (the only I/O)
    pool.py       JudgePool: bounded queue, bounded in-flight calls, retries in bounded time
"""
