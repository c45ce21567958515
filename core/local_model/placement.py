"""A fetched weights file put into place: checked where it arrived (``models/incoming/``), and
only then moved to ``models/<file>.gguf`` with the record of its check, so that a half or wrong
file is never where labtui looks for its model. Shared by the sources of the weights.
"""

from __future__ import annotations

import os
from pathlib import Path

from labtui.core.errors import LabtuiError

from .catalog import CacheDirs, ModelFacts
from .progress import ProgressSink
from .verify import check_weights, forget_verified, write_verified_record


class SourceUnavailable(Exception):
    """A source of the weights cannot serve them now (offline, unreachable, another file): the
    next source is tried. Its text is the reason, in words, for the researcher."""


def place_verified(
    fetched: Path, facts: ModelFacts, dirs: CacheDirs, sink: ProgressSink, *, hint: str
) -> Path:
    """Check ``fetched`` against ``facts`` and move it into place (the same disk: one rename).
    A file that fails the check is removed, and the LabtuiError raised with ``hint``."""
    try:
        record = check_weights(fetched, facts, sink, hint=hint)
    except LabtuiError:
        fetched.unlink(missing_ok=True)
        raise
    final = dirs.model_file(facts)
    forget_verified(final)
    # a rename keeps the file's mtime, which the record was taken with
    os.replace(fetched, final)
    write_verified_record(final, record)
    return final
