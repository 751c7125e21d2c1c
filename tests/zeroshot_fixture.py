"""A zeroshot CLI lesson store built with sqlite3, from /work/shared/REFERENCE.md "Store".

The zeroshot store (not ours): a ``meta`` row with a store-wide ``generation``; ``records``
keyed by ``id`` with ``revision`` (> 0), ``deleted`` (a tombstone has a NULL body), ``kind``,
``repository``, ``graph_hash``, ``node_id`` and ``body``, the card as JSON (camelCase, as the
zeroshot runtime writes its JSON); an initialization-receipts table. WAL, like zeroshot.
Fake values only.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "GITHUB_TOKEN",
    "GRAPH_HASH",
    "REPOSITORY",
    "SOURCE_COMMIT",
    "ULID_ID",
    "ZeroshotRecord",
    "build_zeroshot_store",
    "graph_card",
    "repository_card",
]

REPOSITORY = "forge:github.com/acme/app"
GRAPH_HASH = hashlib.sha256(b"zeroshot graph").hexdigest()
SOURCE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
ULID_ID = "lesson-01HZX3M4K5N6P7Q8R9S0T1V2W3"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

ZeroshotRecord = Mapping[str, Any]

_SCHEMA = (
    """CREATE TABLE meta (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        generation INTEGER NOT NULL CHECK (generation >= 0)
    )""",
    """CREATE TABLE records (
        id TEXT PRIMARY KEY NOT NULL,
        revision INTEGER NOT NULL CHECK (revision > 0),
        deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
        kind TEXT NOT NULL CHECK (kind IN ('repository', 'graph')),
        repository TEXT,
        graph_hash TEXT,
        node_id TEXT,
        body TEXT,
        CHECK ((deleted = 1) = (body IS NULL))
    ) WITHOUT ROWID""",
    """CREATE TABLE initialization_receipts (
        session_id TEXT PRIMARY KEY NOT NULL,
        generation INTEGER NOT NULL,
        receipt TEXT NOT NULL
    )""",
)


def repository_card(
    title: str = "Regenerate the client after editing the API schema",
    *,
    recommendation: str = "Run `make client` after editing api/schema.yaml; CI diffs it.",
    references: Iterable[str] = ("exec:worker-1", f"source:{SOURCE_COMMIT}", "note:kept-aside"),
    evidence: bool = True,
) -> dict[str, Any]:
    card: dict[str, Any] = {
        "title": title,
        "recommendation": recommendation,
        "reasons": "The stale client failed CI twice before the cause was found.",
        "scope": {
            "kind": "repository",
            "repository": REPOSITORY,
            "files": ["api/schema.yaml"],
            "folders": ["clients/python"],
            "identifiers": ["generate_client"],
            "keywordGroups": [["openapi", "client"]],
        },
    }
    if evidence:
        card["evidence"] = {
            "runId": "zs-run-42",
            "references": list(references),
            "reason": "Two failed CI rounds in the worker before regeneration.",
        }
    return card


def graph_card(node_id: str = "verifier") -> dict[str, Any]:
    return {
        "title": "Answer with the verdict object only",
        "recommendation": "The verifier contract needs the JSON verdict as the whole answer.",
        "scope": {"kind": "graph", "graphHash": GRAPH_HASH, "nodeId": node_id},
        "evidence": {
            "runId": "zs-run-7",
            "references": [f"graph:{node_id}"],
            "reason": "The reviewer rejected prose twice.",
        },
    }


def build_zeroshot_store(
    path: Path, records: Iterable[ZeroshotRecord], *, generation: int = 9
) -> Path:
    """Write a zeroshot store at ``path``; each record gives id, revision, kind, body or
    deleted, and the scope columns (defaults from the body's scope)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT INTO meta (singleton, generation) VALUES (1, ?)", (generation,))
        conn.execute(
            "INSERT INTO initialization_receipts VALUES (?, ?, ?)",
            ("init-1", generation, json.dumps({"phase": "complete", "published": 3})),
        )
        for record in records:
            body = record.get("body")
            scope = body.get("scope", {}) if isinstance(body, dict) else {}
            deleted = bool(record.get("deleted", False))
            conn.execute(
                "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record["id"],
                    record.get("revision", 1),
                    int(deleted),
                    record.get("kind", scope.get("kind", "repository")),
                    None if deleted else record.get("repository", scope.get("repository")),
                    None if deleted else record.get("graph_hash", scope.get("graphHash")),
                    None if deleted else record.get("node_id", scope.get("nodeId")),
                    None if deleted else (body if isinstance(body, str) else json.dumps(body)),
                ),
            )
        conn.commit()
    finally:
        conn.close()  # the last connection checkpoints: no -wal or -shm is left beside it
    path.chmod(0o600)  # zeroshot keeps its store a private, host-owned file
    return path
