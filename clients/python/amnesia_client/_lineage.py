"""What the framework integrations share: the subject of a piece of metadata,
and recording a batch of records before the framework writes them."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

from .client import Client
from .types import KINDS, Record


def subject_of(metadata: Optional[Mapping[str, Any]], key: str, index: int, what: str) -> str:
    """The raw subject id in ``metadata[key]``; an error names the item and the key, never a value."""
    v = (metadata or {}).get(key)
    if v is None or v == "":
        raise ValueError(
            f"{what}[{index}]: metadata has no {key!r}: set it to the id of the person the text is about "
            f"(or pass subject_key= to name the metadata key that holds it)"
        )
    if not isinstance(v, str):
        raise ValueError(f"{what}[{index}]: metadata {key!r} must be a string (the person's id)")
    return v


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind: want one of {', '.join(KINDS)}")
    return kind


def record(client: Client, records: Sequence[Record], scope: Optional[str]) -> None:
    """Records lineage, in batches, before anything is written: a refused
    record (a re-ingest of an erased artifact, a key holding the subject id)
    raises and the framework writes nothing."""
    recs: List[Record] = list(records)
    if recs:
        client.record_lineage(recs, scope=scope)
