"""The shared corpus's real sessions, converted and given evidence once per test process.

Three modules read the same real sessions (../shared/corpus): each converted the session and
built its ``repository_discovery`` evidence again, about 0.2 s of CPU a session and half the
time of those modules. What they assert only reads the record, its transcript files and the
bundle, so one conversion and one build per session and specialist serve them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from active_memory.evidence.builder import EvidenceBundle, build_evidence
from active_memory.evidence.sources import open_run_source
from active_memory.models.runs import RunRecord


@dataclass
class Converted:
    """Sessions converted under ``root``, each once; the records and bundles are read-only."""

    root: Path
    records: dict[Path, RunRecord] = field(default_factory=dict)
    bundles: dict[tuple[Path, str], EvidenceBundle] = field(default_factory=dict)

    def record(self, session: Path) -> RunRecord:
        if session not in self.records:
            folder = self.root / f"{len(self.records)}"
            self.records[session] = open_run_source(session, folder / "rec")
        return self.records[session]

    def evidence(self, session: Path, specialist: str) -> EvidenceBundle:
        """``build_evidence`` of the session's record for ``specialist`` at the default budget."""
        if (session, specialist) not in self.bundles:
            private = self.root / f"private-{len(self.bundles)}"
            self.bundles[session, specialist] = build_evidence(
                self.record(session), specialist, private_dir=private
            )
        return self.bundles[session, specialist]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Converted:
    return Converted(tmp_path_factory.mktemp("corpus"))
