"""Per-item work in worker processes: the same results in the same order, small batches at home."""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import os
from collections.abc import Sequence

import pytest

from pipelines.news import batch
from pipelines.news.batch import build_batch
from pipelines.news.parse import ParsePolicy
from pipelines.newsroom.enrichment import Article, LexiconEnricher
from pipelines.platform import parallel
from tests.pipelines.news.conftest import NOW, fixture_document
from tests.pipelines.newsroom.labelled import LABELLED


def square_with_pid(items: Sequence[int]) -> list[tuple[int, int]]:
    return [(n * n, os.getpid()) for n in items]


def one_short(items: Sequence[int]) -> list[int]:
    return list(items)[1:]


def test_a_big_batch_is_computed_by_other_processes_in_order() -> None:
    out = parallel.map_chunks(square_with_pid, list(range(100)), min_chunk=10, processes=2)
    assert [value for value, _ in out] == [n * n for n in range(100)]
    assert os.getpid() not in {pid for _, pid in out}


def test_a_batch_smaller_than_two_chunks_stays_in_the_calling_process() -> None:
    out = parallel.map_chunks(square_with_pid, list(range(19)), min_chunk=10, processes=2)
    assert {pid for _, pid in out} == {os.getpid()}


def test_one_worker_means_no_worker_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    out = parallel.map_chunks(square_with_pid, list(range(100)), min_chunk=10)
    assert {pid for _, pid in out} == {os.getpid()}


def _map_in_daemon(results: multiprocessing.queues.Queue[tuple[int, set[int]]]) -> None:
    out = parallel.map_chunks(square_with_pid, list(range(100)), min_chunk=10, processes=2)
    results.put((os.getpid(), {pid for _, pid in out}))


def test_a_daemonic_process_such_as_a_celery_pool_worker_computes_in_itself() -> None:
    """Celery's pool processes are daemonic and may not start processes: no error, same results."""
    context = multiprocessing.get_context("forkserver")
    results: multiprocessing.queues.Queue[tuple[int, set[int]]] = context.Queue()
    process = context.Process(target=_map_in_daemon, args=(results,), daemon=True)
    process.start()
    pid, used = results.get(timeout=60)
    process.join(timeout=60)
    assert process.exitcode == 0
    assert used == {pid}


def test_work_that_loses_results_is_an_error() -> None:
    with pytest.raises(ValueError, match="98 results for 100 items"):
        parallel.map_chunks(one_short, list(range(100)), min_chunk=10, processes=2)


def test_workers_default_to_the_cpus_available_and_reject_zero() -> None:
    assert parallel.workers({}) == len(os.sched_getaffinity(0))
    assert parallel.workers({parallel.WORKERS_ENV: "3"}) == 3
    with pytest.raises(ValueError, match="at least 1"):
        parallel.workers({parallel.WORKERS_ENV: "0"})


@pytest.mark.parametrize("bad", ["two", "-1", "1.5", " "])
def test_a_workers_setting_that_is_not_a_count_is_refused_by_name(bad: str) -> None:
    with pytest.raises(
        ValueError, match=f"MI_WORKERS must be a whole number of at least 1, not {bad!r}"
    ):
        parallel.workers({parallel.WORKERS_ENV: bad})


def test_enrichment_in_workers_equals_enrichment_in_process() -> None:
    articles = [
        Article(item.market, item.headline, f"{item.headline} {n}")
        for n in range(parallel.MIN_CHUNK * 2 // len(LABELLED) + 1)
        for item in LABELLED
    ]
    lexicon = LexiconEnricher()
    assert len(articles) >= 2 * parallel.MIN_CHUNK
    assert parallel.map_chunks(lexicon.enrich_each, articles, processes=2) == lexicon.enrich_each(
        articles
    )


def test_feeds_parsed_in_workers_give_the_same_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = [
        fixture_document(name)
        for name in (
            "crypto/coinwire.xml",
            "crypto/ledgerdaily.xml",
            "malformed/latin1.xml",
            "malformed/truncated.xml",
        )
    ]
    policy = ParsePolicy(now=NOW)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    at_home = build_batch("crypto", documents, policy)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    monkeypatch.setattr(batch, "PARSE_CHUNK", 1)
    in_workers = build_batch("crypto", documents, policy)
    assert in_workers.articles.equals(at_home.articles)
    assert in_workers.rejects.equals(at_home.rejects)
    assert in_workers.duplicates == at_home.duplicates
    assert in_workers.items_read == at_home.items_read
