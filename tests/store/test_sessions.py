"""The sessions database: round trips, no duplicates, migrations, refusals, ownership."""

import dataclasses
import json
import sqlite3

import pytest

from cuda_llm.engine.core import serialize
from cuda_llm.engine.core.settings import GenerateOptions, LoopSettings
from cuda_llm.engine.gpu.compare import Mismatch
from cuda_llm.engine.gpu.protocol import CaseReport, RanOn, Timing, ValidationReport
from cuda_llm.engine.judge.judgement import Candidate, Judgement
from cuda_llm.engine.llm.base import Completion, Message, RequestKey
from cuda_llm.engine.store.schema import MIGRATIONS, SCHEMA_VERSION
from cuda_llm.engine.store.sessions import CRASH_PREFIX, SessionStore, StoreError
from cuda_llm.engine.task.plan import parse_plan

PLAN = parse_plan({"launches": [{"kernel": "k", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["x", "n"]}]})


def judgement(label: str = "r1-1", status: str = "wrong") -> Judgement:
    cand = Candidate(label, 'extern "C" __global__ void k(float* x, int n) {}', PLAN, "why", "model")
    report = ValidationReport(
        verdict="wrong",
        summary="wrong in 1 of 2 cases",
        cases=(
            CaseReport("n=1 seed 0", False, 1, 1, 1, float("inf")),
            CaseReport("n=3 seed 0", True, 3, 0, 0, 0.1),
        ),
        mismatches=(Mismatch("x", (0,), 1.0, float("nan"), float("inf"), float("inf"), "n=1 seed 0"),),
        patterns=("every element is unwritten (still NaN) at n=1 seed 0",),
    )
    timing = Timing("r1-1", 10.0, 9.5, 10.5, 9.4, 12, 0, "events", 1, 1980.0)
    return Judgement(
        label,
        status,
        "wrong in 1 of 2 cases",
        candidate=cand,
        validation=report,
        timing=timing,
        warnings=("a note",),
    )


@pytest.fixture
def store(tmp_path):
    s = SessionStore(tmp_path / "s.db")
    yield s
    s.close()


def new_session(store: SessionStore) -> int:
    return store.create_session(
        "vector_add",
        "/tasks/vector_add",
        "abc",
        "ollama:m",
        LoopSettings(candidates=2),
        "NVIDIA H200 (sm_90)",
        "sm_90",
    )


def test_judgement_round_trip_keeps_nested_reports_and_infinities(store):
    sid = new_session(store)
    j = judgement()
    store.record_judgement(sid, j, RequestKey(1, 0, 0))
    back = store.candidates(sid)[0].judgement
    assert back == j or (back.validation.mismatches[0].got != back.validation.mismatches[0].got)  # NaN != NaN
    assert back.candidate.plan == PLAN
    assert back.validation.cases[0].worst_ratio == float("inf")
    assert back.timing.median_us == 10.0 and back.warnings == ("a note",)


def test_reply_then_judgement_is_one_row_and_counts_tokens(store):
    sid = new_session(store)
    comp = Completion("text", "m", 100, 50, 1.0, 0.2, "stop")
    store.record_reply(sid, "r1-1", RequestKey(1, 0, 0), "model", "reply text", comp)
    store.record_reply(sid, "r1-1", RequestKey(1, 0, 0), "model", "reply text", None)  # a retry writes again
    store.record_judgement(sid, judgement(), RequestKey(1, 0, 0))
    rows = store.candidates(sid)
    assert len(rows) == 1
    assert rows[0].reply == "reply text" and rows[0].status == "wrong"
    assert rows[0].completion.completion_tokens == 50
    assert store.session(sid).tokens_used == 150


def test_replies_by_request_key_for_replay(store):
    sid = new_session(store)
    store.record_reply(sid, "r1-1", RequestKey(1, 0, 0), "model", "a", None)
    store.record_reply(sid, "r1-fix1-2", RequestKey(1, 1, 1), "model", "b", None)
    store.record_judgement(sid, judgement("r1-edit1"), RequestKey(1, 0, 1001), origin="user")
    assert store.replies(sid) == {RequestKey(1, 0, 0): "a", RequestKey(1, 1, 1): "b"}


def test_settings_and_prompts_round_trip(store):
    sid = new_session(store)
    assert store.session(sid).settings == LoopSettings(candidates=2)
    msgs = [Message("system", "rules"), Message("user", "task $x {json}")]
    store.record_prompt(sid, 2, 1, msgs)
    assert store.prompt(sid, 2, 1) == msgs
    assert store.prompt(sid, 2, 0) is None
    assert store.session(sid).settings.generate == GenerateOptions()


def test_unknown_session_is_one_clear_line(store):
    with pytest.raises(StoreError, match=r"no session 42 .* `cuda-llm sessions` lists them"):
        store.session(42)


def test_older_schema_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    MIGRATIONS[1](db)
    db.execute("PRAGMA user_version = 1")
    db.execute(
        "INSERT INTO sessions (created_at, updated_at, task, task_folder, task_fingerprint, model, "
        "settings_json, device, arch, status) VALUES (1, 1, 't', '/t', 'f', 'm', ?, 'd', 'sm_90', 'finished')",
        (json.dumps(serialize.dump(LoopSettings())),),
    )
    db.commit()
    db.close()
    store = SessionStore(path)
    try:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        rec = store.session(1)
        assert rec.task == "t" and rec.tokens_used == 0 and rec.owner_pid is None
        assert store.integrity_ok()
    finally:
        store.close()


def test_compile_only_is_read_from_the_environment_and_for_older_sessions_from_the_label(store):
    gpu, none = new_session(store), new_session(store)
    store.update_session(none, device="compile-only (sm_90)")
    assert not store.session(gpu).compile_only and store.session(none).compile_only, "no environment kept"
    store.update_session(gpu, environment_json=json.dumps({"compile_only": True}))
    store.update_session(none, environment_json=json.dumps({"compile_only": False}))
    assert store.session(gpu).compile_only and not store.session(none).compile_only, "the recorded fact wins"


def test_a_session_the_app_died_with_is_listed_as_crashed(store):
    crashed, stopped = new_session(store), new_session(store)
    store.update_session(crashed, status="stopped", status_message=CRASH_PREFIX + "KeyError: 'pane'")
    store.update_session(stopped, status="stopped", status_message="stopped by the user")
    assert store.session(crashed).crashed and store.session(crashed).listed_status == "stopped (crashed)"
    assert store.session(crashed).shown_status == "stopped", "the headless listing keeps the plain word"
    assert not store.session(stopped).crashed and store.session(stopped).listed_status == "stopped"


def test_where_a_candidate_ran_is_recorded_and_queryable(store):
    sid = new_session(store)
    ran_on = RanOn("node-b", 3, "NVIDIA H100 80GB HBM3", "GPU-1234", node_id="c0ffee")
    store.record_judgement(sid, dataclasses.replace(judgement(), ran_on=ran_on), RequestKey(1, 0, 0))
    store.record_judgement(sid, judgement("r1-2", "compile_error"), RequestKey(1, 0, 1))
    rows = {r.label: r for r in store.candidates(sid)}
    assert rows["r1-1"].judgement.ran_on == ran_on
    assert (rows["r1-1"].node, rows["r1-1"].gpu) == ("node-b", "NVIDIA H100 80GB HBM3 #3")
    assert (rows["r1-2"].node, rows["r1-2"].gpu) == (None, None), "never ran on a GPU"
    grouped = store.db.execute("SELECT node, COUNT(*) FROM candidates WHERE node IS NOT NULL GROUP BY node").fetchall()
    assert [tuple(g) for g in grouped] == [("node-b", 1)]


def test_v3_candidates_gain_the_machine_and_gpu_they_were_judged_on(tmp_path):
    path = tmp_path / "v3.db"
    db = sqlite3.connect(path)
    for version in (1, 2, 3):
        MIGRATIONS[version](db)
    db.execute("PRAGMA user_version = 3")
    db.execute(
        "INSERT INTO sessions (created_at, updated_at, task, task_folder, task_fingerprint, model, settings_json, "
        "device, arch, status, owner_host) VALUES (1, 1, 't', '/t', 'f', 'm', ?, 'd', 'sm_90', 'finished', 'gpu-box')",
        (json.dumps(serialize.dump(LoopSettings())),),
    )
    on_gpu = dataclasses.replace(judgement(), device="NVIDIA H200 #1")
    compiled_only = judgement("r1-2", "compiled")
    for j in (on_gpu, compiled_only):
        db.execute(
            "INSERT INTO candidates (session_id, label, round, attempt, slot, origin, status, judgement_json, "
            "created_at) VALUES (1, ?, 1, 0, 0, 'model', ?, ?, 1)",
            (j.label, j.status, json.dumps(serialize.dump(j))),
        )
    db.commit()
    db.close()
    store = SessionStore(path)
    try:
        rows = {r.label: r for r in store.candidates(1)}
        assert (rows["r1-1"].node, rows["r1-1"].gpu) == ("gpu-box", "NVIDIA H200 #1")
        assert (rows["r1-2"].node, rows["r1-2"].gpu) == (None, None)
        assert rows["r1-1"].judgement.ran_on is None, "older judgements load as they were"
        assert store.integrity_ok()
    finally:
        store.close()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer cuda-llm"):
        SessionStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, not sqlite " * 100)
    with pytest.raises(StoreError, match="not a cuda-llm session database"):
        SessionStore(path)


def test_second_process_cannot_claim_a_running_session(store, monkeypatch):
    sid = new_session(store)
    store.update_session(sid, owner_pid=1, status="running")  # pid 1 is always alive
    with pytest.raises(StoreError, match="being run by process 1"):
        store.claim(sid)
    store.update_session(sid, status="paused")
    store.claim(sid)
    assert store.session(sid).status == "running"


def test_second_connection_sees_committed_rows(tmp_path):
    a = SessionStore(tmp_path / "shared.db")
    b = SessionStore(tmp_path / "shared.db")
    try:
        sid = new_session(a)
        a.record_judgement(sid, judgement(), RequestKey(1, 0, 0))
        assert [c.label for c in b.candidates(sid)] == ["r1-1"]
    finally:
        a.close()
        b.close()


def _open_in_rounds(folder: str, rounds: int, barrier, results) -> None:
    """One process of the test below: open each round's new database together with the others."""
    for r in range(rounds):
        barrier.wait()
        try:
            SessionStore(f"{folder}/round-{r}.db").close()
            results.put("ok")
        except StoreError as exc:
            results.put(str(exc))


def test_runs_started_together_on_a_new_database_all_open_it(tmp_path):
    """Two runs started at once on a file that does not exist yet (a script launching several): each
    creates, turns to WAL and migrates it while the others do. SQLite does not wait for a lock to
    change the journal mode, and a file read between another's two writes looked like another
    program's: one of them was refused in most rounds."""
    import multiprocessing

    processes, rounds = 3, 12
    ctx = multiprocessing.get_context("spawn")  # (no fork of the test process and its threads)
    barrier, results = ctx.Barrier(processes), ctx.Queue()
    args = (str(tmp_path), rounds, barrier, results)
    workers = [ctx.Process(target=_open_in_rounds, args=args) for _ in range(processes)]
    for w in workers:
        w.start()
    outcomes = [results.get(timeout=120) for _ in range(processes * rounds)]
    for w in workers:
        w.join(timeout=30)
    refused = [o for o in outcomes if o != "ok"]
    assert not refused, f"{len(refused)} of {len(outcomes)} opens refused, first: {refused[0]}"
    for r in range(rounds):
        store = SessionStore(tmp_path / f"round-{r}.db", read_only=True)
        try:
            assert store.integrity_ok()
        finally:
            store.close()
