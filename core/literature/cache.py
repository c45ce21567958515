"""The on-disk cache of searches (arXiv, Semantic Scholar): one JSON file per exact search, so a
resumed or replayed run asks nothing it already asked. Only real answers are cached (an empty
list is a real answer, a failure is not); files are written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

CACHE_FORMAT = 1


class Cacheable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


C = TypeVar("C", bound=Cacheable)


def cached_papers(
    folder: Path,
    about: dict[str, Any],
    fetch: Callable[[], list[C]],
    build: Callable[[dict[str, Any]], C],
) -> list[C]:
    """Papers of the search that ``about`` describes (base_url, query, ...): from its cache
    file, else from ``fetch()``, then cached. A damaged file is a miss; a failure raises and
    is never cached. ``build`` turns a cached dict back into a paper.
    """
    key = json.dumps(list(about.values()), ensure_ascii=False)
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") == CACHE_FORMAT:
            return [build(p) for p in data["papers"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    papers = fetch()
    data = {
        "format": CACHE_FORMAT,
        **about,
        "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "papers": [p.to_dict() for p in papers],
    }
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1))
    return papers


def atomic_write_text(path: Path, text: str) -> None:
    """Write atomically, so a run killed mid-write never leaves a half file to trip on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
