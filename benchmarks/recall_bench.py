"""Recall benchmark: index build, match latency, broker round trips, hook command wall time.

Run: ``python benchmarks/recall_bench.py`` (``--quick`` for a smaller, faster pass).

The run start's index (from a snapshot's verified rows, without a model per lesson) is measured
in CPU time, loaded from the file kept for the same rows and built from the rows, against the
path it replaced and a fixed reference loop, in the same run.

Figures are medians and p99s measured in this run; the hook commands are compared with
baselines measured in the same run (a bare ``curl`` of a closed port, ``python3 -I -S -c pass``),
interleaved so machine noise hits every series alike. Targets (issue 33, ``hot_paths.py``):
match p99 at most 0.25 ms at 100,000 lessons; the curl hook within 1.2x bare curl; the Python
helper within 1.2x the bare interpreter; an earlier issue's: http hook round trip under 2 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

from hook_fallback_bench import timed_spawns

from active_memory.hooks import helper as helper_module
from active_memory.hooks.commands import curl_command
from active_memory.hooks.install import helper_command
from active_memory.host import open_run
from active_memory.models.config import RuntimeConfig
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, Lesson, RepositoryScope
from active_memory.recall.index import RecallIndex
from active_memory.recall.index_file import index_file, load_or_build
from active_memory.recall.signals import Signals, ToolCall, WorkspaceRoot, extract_signals
from active_memory.recall.wire import opened_answer, signed_request
from active_memory.store.backend import RunIdentity, Snapshot, SnapshotRequest
from active_memory.store.checked_rows import StoredLessons
from active_memory.store.codec import DecodedRows, encode_draft
from active_memory.store.rows import row_checksum

REPOSITORY = "forge:example.com/acme/monorepo"
WORKSPACE = "/work/monorepo"
EVIDENCE = Evidence(run_id="bench", references=("exec:e1",), reason="synthetic")
RECOMMENDATION = "Check the cache region before retrying the export; the queue lease expires."


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def line(label: str, samples: Sequence[float], unit: str = "ms", scale: float = 1e3) -> str:
    median, p99 = statistics.median(samples) * scale, percentile(samples, 0.99) * scale
    return f"  {label:<44} median {median:9.3f} {unit}   p99 {p99:9.3f} {unit}   (n={len(samples)})"


class Tree:
    """A synthetic monorepo: a vocabulary, nested folders, files and identifiers."""

    def __init__(self, rng: random.Random, folders: int, files: int, identifiers: int) -> None:
        syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "pe", "du", "ga", "xi"]
        self.words = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4)))
                             for _ in range(6_000)})  # fmt: skip
        self.folders = [f"pkg{n}" for n in range(20)]
        while len(self.folders) < folders:
            self.folders.append(f"{rng.choice(self.folders)}/{rng.choice(self.words)}")
        self.folders = sorted(set(self.folders))
        self.files = [f"{rng.choice(self.folders)}/{rng.choice(self.words)}_{n}.py"
                      for n in range(files)]  # fmt: skip
        self.identifiers = [f"{rng.choice(self.words)}_{rng.choice(self.words)}{n}"
                            for n in range(identifiers)]  # fmt: skip

    def group(self, rng: random.Random) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rng.sample(self.words, rng.randint(2, 3))))


def make_lessons(count: int, tree: Tree, rng: random.Random) -> list[Lesson]:
    deep = [folder for folder in tree.folders if folder.count("/") >= 2]
    lessons = []
    for number in range(count):
        scope = RepositoryScope(
            repository=REPOSITORY,
            files=tuple(dict.fromkeys(rng.sample(tree.files, rng.randint(0, 3)))),
            folders=tuple(rng.sample(deep, rng.randint(0, 1))),
            identifiers=tuple(dict.fromkeys(rng.sample(tree.identifiers, rng.randint(1, 3)))),
            keyword_groups=tuple(tree.group(rng) for _ in range(rng.randint(0, 2))),
        )
        lesson_id = new_lesson_id(1_700_000_000_000 + number)
        title = f"Synthetic lesson {number}"
        lessons.append(Lesson(id=lesson_id, revision=1, scope=scope, title=title,
                              recommendation=RECOMMENDATION, evidence=EVIDENCE))  # fmt: skip
    return lessons


def make_queries(tree: Tree, rng: random.Random, count: int) -> list[ToolCall]:
    """Reads, shell commands, greps and edits whose code holds a few known identifiers."""
    calls = []
    for _ in range(count):
        kind = rng.randrange(4)
        if kind == 0:
            path = f"{WORKSPACE}/{rng.choice(tree.files)}"
            calls.append(ToolCall("Read", {"file_path": path}, WORKSPACE))
        elif kind == 1:
            folder, ident = rng.choice(tree.folders), rng.choice(tree.identifiers)
            command = f"cd {folder} && python -m pytest -q -k {ident} ../{rng.choice(tree.words)}"
            calls.append(ToolCall("Bash", {"command": command}, WORKSPACE))
        elif kind == 2:
            pattern = f"{rng.choice(tree.identifiers)}|{rng.choice(tree.words)}Client"
            arguments = {"pattern": pattern, "path": rng.choice(tree.folders)}
            calls.append(ToolCall("Grep", arguments, WORKSPACE))
        else:
            code = [rng.choice(tree.words) for _ in range(60)] + rng.sample(tree.identifiers, 3)
            body = " ".join(code)
            arguments = {"file_path": rng.choice(tree.files), "old_string": body,
                         "new_string": body + " x"}  # fmt: skip
            calls.append(ToolCall("Edit", arguments, WORKSPACE))
    return calls


def lookup_floor(index: RecallIndex) -> Callable[[Signals], object]:
    """The table lookups no match can skip, each one C call over a call's keys, in tables of
    the same size as ``index``'s (its state's, and a frozenset of second terms per rarest term,
    built here): the file, every folder prefix, every identifier, the second terms of every
    word. No scoring, no group read, no ranking, no card: the memory a match must touch, with
    the least Python around it. A floor to compare the match with, not a matcher."""
    _, _, files, folders, identifiers, groups = index.state()
    seconds = {first: frozenset(waiting) for first, waiting in groups.items()}

    def lookups(found: Signals) -> object:
        words = found.words
        prefixes = [path.rsplit("/", cut)[0] for path in found.paths
                    for cut in range(path.count("/") + 1)]  # fmt: skip
        return (list(map(files.get, found.paths)), list(map(folders.get, prefixes)),
                list(map(identifiers.get, found.identifiers)),
                list(map(words.intersection, filter(None, map(seconds.get, words)))))  # fmt: skip

    return lookups


def index_figures(
    size: int, queries: int, tree: Tree | None = None
) -> dict[str, float | list[float]]:
    """Build (median of 3, seconds) from ready-made lessons, and match latencies (seconds, one
    per query: wall clock; this thread's CPU time, which leaves out the time other processes
    hold the core; the least CPU time of 5 repeats of the query, which also leaves out the
    caches other processes emptied) and cards matched, at ``size`` lessons. ``floor``: the CPU
    time of :func:`lookup_floor` on each query, in a second pass that runs between queries what
    the first runs, so its tables are as cold as the match's."""
    rng = random.Random(7)
    tree = tree or Tree(rng, folders=20_000, files=200_000, identifiers=150_000)
    root = WorkspaceRoot((WORKSPACE,))
    calls = make_queries(tree, rng, queries)
    signals = [extract_signals(call, root) for call in calls]
    lessons = make_lessons(size, tree, rng)
    builds = []
    for _ in range(3):
        started = time.perf_counter()
        index = RecallIndex(lessons, repository=REPOSITORY)
        builds.append(time.perf_counter() - started)
    match: list[float] = []
    match_cpu: list[float] = []
    match_best: list[float] = []  # the least CPU time of 5 repeats: the code's own cost
    both: list[float] = []
    matched: list[float] = []
    for call, found in zip(calls, signals, strict=True):
        started, started_cpu = time.perf_counter(), time.thread_time()
        matched.append(len(index.match(found)))
        match_cpu.append(time.thread_time() - started_cpu)
        match.append(time.perf_counter() - started)
        started = time.perf_counter()
        index.match(extract_signals(call, root))
        both.append(time.perf_counter() - started)
        repeated = []
        for _ in range(5):
            started_cpu = time.thread_time()
            index.match(found)
            repeated.append(time.thread_time() - started_cpu)
        match_best.append(min(repeated))
    floor: list[float] = []
    lookups = lookup_floor(index)
    for call, found in zip(calls, signals, strict=True):
        started_cpu = time.thread_time()
        lookups(found)
        floor.append(time.thread_time() - started_cpu)
        index.match(extract_signals(call, root))
        for _ in range(5):
            index.match(found)
    return {"build": statistics.median(builds), "match": match, "match_cpu": match_cpu,
            "match_best": match_best, "both": both, "matched": matched,
            "floor": floor}  # fmt: skip


def bench_index(sizes: Sequence[int], queries: int) -> None:
    print("index build and match (resident index, no I/O)")
    tree = Tree(random.Random(7), folders=20_000, files=200_000, identifiers=150_000)
    for size in sizes:
        figures = index_figures(size, queries, tree)
        matched = figures["matched"]
        assert isinstance(matched, list)
        print(f"  {size:,} lessons: build median {figures['build']:.3f} s (n=3); "
              f"cards matched per query: median {statistics.median(matched):.0f}, "
              f"max {max(matched):.0f}")  # fmt: skip
        print(line("match (index lookup)", figures["match"]))  # type: ignore[arg-type]
        print(line("match, CPU time", figures["match_cpu"]))  # type: ignore[arg-type]
        print(line("match, CPU time, least of 5 repeats", figures["match_best"]))  # type: ignore[arg-type]
        print(line("floor: its table lookups alone, CPU time", figures["floor"]))  # type: ignore[arg-type]
        print(line("signals + match", figures["both"]))  # type: ignore[arg-type]


def stored_rows(lessons: Sequence[Lesson]) -> list[tuple[object, ...]]:
    """The verified ``LIVE_COLUMNS, checksum`` rows a store's snapshot holds for ``lessons``."""
    rows = []
    for lesson in lessons:
        encoded = encode_draft(lesson.draft)
        row = (lesson.id, lesson.revision, encoded.body, encoded.evidence, encoded.kind,
               encoded.repository, encoded.graph_hash, encoded.node_id)  # fmt: skip
        rows.append((*row, row_checksum(row)))
    return rows


def reference_loop() -> float:
    """CPU seconds of a fixed loop of 1,000,000 additions: what this machine does in the time."""
    started, total = time.process_time(), 0
    for number in range(1_000_000):
        total += number
    return time.process_time() - started


def rows_build_figures(size: int, rounds: int = 3) -> dict[str, float]:
    """Median CPU seconds, over ``rounds`` interleaved rounds, of what a run start spends on its
    index from a snapshot's verified rows: loaded from the file kept for the same rows
    (``cached``: the rows' content key, one read, the digest check, ``marshal``), built from the
    rows (``rows``: ``RecallIndex.from_entries``, no model), built and its file written
    (``written``: the first start after the store changed), and the path the row build replaced
    (every lesson decoded, then indexed), beside :func:`reference_loop`. CPU time rather than
    wall time: on a shared machine it leaves out the time other processes hold the core."""
    rng = random.Random(7)
    tree = Tree(rng, folders=20_000, files=200_000, identifiers=150_000)
    rows = stored_rows(make_lessons(size, tree, rng))
    samples: dict[str, list[float]] = {
        "cached": [], "rows": [], "written": [], "decoded": [], "reference": []
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:

        def start(stored: StoredLessons) -> tuple[RecallIndex, bool]:
            return load_or_build(folder, REPOSITORY, stored.checksums(), stored.recall_entries,
                                 stored.graph_lessons())  # fmt: skip

        start(StoredLessons(rows, DecodedRows(2 * size)))  # the file a later start loads
        # Each index is kept until its time is taken: freeing a million objects is not part of
        # a start (a run keeps its index to the end).
        for _ in range(rounds):
            started = time.process_time()
            index, loaded = start(StoredLessons(rows, DecodedRows(2 * size)))
            samples["cached"].append(time.process_time() - started)
            assert loaded, "the file kept for these rows was not loaded"
            del index
            started = time.process_time()
            stored = StoredLessons(rows, DecodedRows(2 * size))
            index = RecallIndex.from_entries(stored.recall_entries(), stored.graph_lessons(),
                                             repository=REPOSITORY)  # fmt: skip
            samples["rows"].append(time.process_time() - started)
            del index, stored
            os.unlink(index_file(folder, REPOSITORY))
            started = time.process_time()
            index, loaded = start(StoredLessons(rows, DecodedRows(2 * size)))
            samples["written"].append(time.process_time() - started)
            assert not loaded
            del index
            started = time.process_time()
            lessons = tuple(StoredLessons(rows, DecodedRows(2 * size)))
            index = RecallIndex(lessons, repository=REPOSITORY)
            samples["decoded"].append(time.process_time() - started)
            del index, lessons
            samples["reference"].append(reference_loop())
    return {name: statistics.median(values) for name, values in samples.items()}


def bench_rows_build(size: int) -> None:
    figures = rows_build_figures(size)
    print(f"run start's index from a snapshot's verified rows, {size:,} lessons "
          "(CPU time, median of 3)")  # fmt: skip
    print(f"  loaded from its file (same rows as last start)  {figures['cached']:.3f} s")
    print(f"  built from the rows (no model)                  {figures['rows']:.3f} s")
    print(f"  built from the rows and its file written        {figures['written']:.3f} s")
    print(f"  every lesson decoded, then indexed (before)     {figures['decoded']:.3f} s")
    print(f"  reference loop of 1,000,000 additions           {figures['reference']:.3f} s")
    print(f"  ratio loaded / built from rows: {figures['cached'] / figures['rows']:.2f}x; "
          f"rows / decoded: {figures['rows'] / figures['decoded']:.2f}x; "
          f"rows / reference loop: {figures['rows'] / figures['reference']:.1f}x")  # fmt: skip


class FakeBackend:
    def __init__(self, lessons: list[Lesson]) -> None:
        self.lessons = tuple(lessons)

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        return Snapshot(1, self.lessons)

    def publish(self, *args: object) -> object:
        raise NotImplementedError

    def generation(self) -> int:
        return 1


def claude_payload(path: str) -> bytes:
    return json.dumps({
        "session_id": "bench", "transcript_path": "/tmp/t.jsonl", "cwd": WORKSPACE,
        "hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": f"{WORKSPACE}/{path}"}, "tool_use_id": "toolu_bench",
    }).encode()  # fmt: skip


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bench_broker(rounds: int, spawn_rounds: int) -> dict[str, float]:
    rng = random.Random(11)
    tree = Tree(rng, folders=5_000, files=30_000, identifiers=20_000)
    lessons = make_lessons(10_000, tree, rng)
    identity = RunIdentity("bench", repository=REPOSITORY)
    run = open_run(identity, RuntimeConfig(), FakeBackend(lessons), WORKSPACE)
    try:
        env = run.hook_env("bench-node", "bench-conversation")
        host, port = env["ACTIVE_MEMORY_BROKER"].split(":")
        token = env["ACTIVE_MEMORY_TOKEN"]
        paths = [rng.choice(tree.files) for _ in range(rounds)]
        print("broker round trip (10,000 lessons, Claude Read payloads, fresh conversations)")

        def helper_protocol(number: int) -> None:
            payload = json.loads(claude_payload(paths[number]))
            message = {"harness": "claude", "conversation_id": f"h{number}", "payload": payload}
            request, nonce = signed_request(token, message)
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(request)
                size = int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big")
                if opened_answer(token, nonce, sock.recv(size, socket.MSG_WAITALL)) is None:
                    raise SystemExit("the broker's answer was not signed for this call")
                ack = b'{"ack":true}'
                sock.sendall(len(ack).to_bytes(4, "big") + ack)

        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}

        def http_new(number: int) -> None:
            connection = http.client.HTTPConnection(host, int(port))
            extra = {**headers, "X-Active-Memory-Conversation": f"n{number}"}
            connection.request("POST", "/hook/claude", claude_payload(paths[number]), extra)
            connection.getresponse().read()
            connection.close()

        keep = http.client.HTTPConnection(host, int(port))

        def http_keep_alive(number: int) -> None:
            keep.request("POST", "/hook/claude", claude_payload(paths[number]),
                         {**headers, "X-Active-Memory-Conversation": f"k{number}"})  # fmt: skip
            keep.getresponse().read()

        for label, call in (("helper protocol (frame + ack)", helper_protocol),
                            ("http hook, new connection", http_new),
                            ("http hook, keep-alive connection", http_keep_alive)):  # fmt: skip
            samples = []
            for number in range(rounds):
                started = time.perf_counter()
                call(number)
                samples.append(time.perf_counter() - started)
            print(line(label, samples))
        keep.close()
        return bench_commands(env, claude_payload(paths[0]), spawn_rounds)
    finally:
        run.close()


def bench_commands(env: dict[str, str], payload: bytes, rounds: int) -> dict[str, float]:
    curl = shutil.which("curl")
    print("hook commands as `hooks install` writes them (spawned per tool call)")
    if curl is None:
        print("  curl is not installed: the curl hook and its baseline are skipped")
    base_env = {"PATH": "/usr/bin:/bin", **env}
    dead = f"http://127.0.0.1:{closed_port()}/"

    def spawn(argv: list[str], data: bytes = b"") -> Callable[[], None]:
        return lambda: subprocess.run(argv, input=data, capture_output=True, env=base_env,
                                      check=False)  # fmt: skip

    commands: dict[str, Callable[[], None]] = {
        "python3 -I -S -c pass (baseline)": spawn([sys.executable, "-I", "-S", "-c", "pass"]),
        "sh -c 'python3 -I -S -c pass' (baseline)": spawn(
            ["sh", "-c", f"{sys.executable} -I -S -c pass"]),
        "python helper hook (sh -c, live broker)": spawn(
            ["sh", "-c", helper_command("claude")], payload),
        "python helper as a script (comparison)": spawn(
            ["sh", "-c", f"{sys.executable} -I -S {helper_module.__file__} claude"], payload),
    }  # fmt: skip
    if curl is not None:
        commands["bare curl of a closed port (baseline)"] = spawn([curl, "-s", dead])
        commands["sh -c 'curl closed port' (baseline)"] = spawn(["sh", "-c", f"curl -s {dead}"])
        commands["curl hook (sh -c, live broker)"] = spawn(
            ["sh", "-c", curl_command("claude")], payload)  # fmt: skip
    samples = timed_spawns(commands, rounds)
    for name, spawned in samples.items():
        print(line(name, spawned.wall) + f"   CPU {statistics.median(spawned.cpu) * 1e3:.3f} ms")
    median = {name: statistics.median(spawned.wall) for name, spawned in samples.items()}
    cpu = {name: statistics.median(spawned.cpu) for name, spawned in samples.items()}
    ratios: dict[str, float] = {}
    # (hook, its baseline, the same baseline under sh -c): wall and CPU ratios to each
    pairs = {"python": ("python helper hook (sh -c, live broker)",
                        "python3 -I -S -c pass (baseline)",
                        "sh -c 'python3 -I -S -c pass' (baseline)")}  # fmt: skip
    if curl is not None:
        pairs["curl"] = ("curl hook (sh -c, live broker)", "bare curl of a closed port (baseline)",
                         "sh -c 'curl closed port' (baseline)")  # fmt: skip
    for kind, (hook, bare, shell) in pairs.items():
        ratios[kind], ratios[f"{kind}_cpu"] = median[hook] / median[bare], cpu[hook] / cpu[bare]
        print(f"  ratio {hook} / {bare}: {ratios[kind]:.2f}x, CPU {ratios[f'{kind}_cpu']:.2f}x; "
              f"/ {shell}: {median[hook] / median[shell]:.2f}x, "
              f"CPU {cpu[hook] / cpu[shell]:.2f}x")  # fmt: skip
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 lessons only, fewer rounds")
    options = parser.parse_args()
    sizes = [10_000] if options.quick else [10_000, 100_000]
    bench_index(sizes, queries=500 if options.quick else 2_000)
    bench_rows_build(sizes[-1])
    bench_broker(rounds=200 if options.quick else 1_000, spawn_rounds=15 if options.quick else 60)


if __name__ == "__main__":
    main()
