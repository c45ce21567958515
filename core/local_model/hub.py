"""The weights from Hugging Face Hub, through huggingface_hub's own downloader.

It downloads into ``models/incoming/hub/`` (its ``.incomplete`` file under ``.cache/`` there is
what a cut download resumes from, with an HTTP Range request); the file is checked there and
only then moved into place. huggingface_hub checks the length it received, not the bytes: the
SHA-256 is labtui's check. Before it, one HEAD request asks whether the Hub is there and serves
the file labtui knows (its size and LFS SHA-256): huggingface_hub, finding no Hub, waits and
retries (1.4.1 then fails on its own closed client, a RuntimeError, after a second; the waits
would add up to 23 s), and a wrong file is better refused unread.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from .catalog import CacheDirs, ModelFacts
from .disk import ensure_room, is_disk_full, room_error
from .placement import SourceUnavailable, place_verified
from .progress import Progress, ProgressSink

HUB = "Hugging Face Hub"
HEAD_TIMEOUT_S = 10.0
ATTEMPTS = 3
"""Downloads tried in one pull while each gets further than the last (each resumes)."""
_SHA256 = re.compile(r"[0-9a-f]{64}")

MISMATCH_HINT = (
    "try again; if the Hub serves other bytes again, name a GGUF file you trust with "
    "`labtui model use PATH`"
)


def from_hub(
    facts: ModelFacts, dirs: CacheDirs, sink: ProgressSink, endpoint: str | None = None
) -> Path:
    """``facts``' weights downloaded from the Hub, checked and in place. Raises
    SourceUnavailable when the Hub cannot serve them now, LabtuiError when the file that came is
    not the one expected (it is removed) or the disk has no room."""
    folder = dirs.incoming / "hub"
    _check_hub_serves(facts, endpoint)
    _drop_overlong_partials(folder, facts.size)
    what = f"downloading {facts.file_name}"
    ensure_room(dirs.models, facts.size - _partial_bytes(folder), what)
    fetched = _download(facts, folder, sink, endpoint)
    final = place_verified(fetched, facts, dirs, sink, hint=MISMATCH_HINT)
    shutil.rmtree(folder, ignore_errors=True)
    return final


def _check_hub_serves(facts: ModelFacts, endpoint: str | None) -> None:
    """One HEAD request, without retries: the Hub is there and serves ``facts``' file."""
    import httpx  # noqa: PLC0415 -- huggingface_hub's HTTP client, loaded with it, only to download
    from huggingface_hub import get_hf_file_metadata, hf_hub_url  # noqa: PLC0415 -- 0.2 s to import, only to download

    url = hf_hub_url(facts.hf_repo, facts.hf_file, endpoint=endpoint)
    try:
        found = get_hf_file_metadata(url, timeout=HEAD_TIMEOUT_S, endpoint=endpoint)
    except (httpx.HTTPError, OSError) as error:
        raise SourceUnavailable(f"could not ask {url}: {_reason(error)}") from error
    if found.commit_hash is None or found.etag is None:
        raise SourceUnavailable(f"{url} does not answer as the Hub does (no commit, no ETag)")
    if found.size is not None and found.size != facts.size:
        raise SourceUnavailable(
            f"it serves {facts.hf_file} with {found.size:,} bytes, not the {facts.size:,} "
            "labtui knows"
        )
    if _SHA256.fullmatch(found.etag) and found.etag != facts.sha256:
        raise SourceUnavailable(
            f"it serves {facts.hf_file} with SHA-256 {found.etag}, not the {facts.sha256} "
            "labtui knows"
        )


def _download(facts: ModelFacts, folder: Path, sink: ProgressSink, endpoint: str | None) -> Path:
    """huggingface_hub's download, tried again (resuming) while each try gets further."""
    import httpx  # noqa: PLC0415 -- huggingface_hub's HTTP client, loaded with it, only to download
    from huggingface_hub import hf_hub_download  # noqa: PLC0415 -- 0.2 s to import, only to download

    what = f"downloading {facts.file_name}"
    progress = _progress_class(sink, what, facts.size)
    for attempt in range(1, ATTEMPTS + 1):
        before = _partial_bytes(folder)
        try:
            got = hf_hub_download(
                repo_id=facts.hf_repo,
                filename=facts.hf_file,
                local_dir=folder,
                endpoint=endpoint,
                tqdm_class=progress,
            )
            return Path(str(got))
        # RuntimeError: huggingface_hub 1.4.1, retrying a refused connection, reuses the client
        # it has just closed ("Cannot send a request, as the client has been closed")
        except (httpx.HTTPError, OSError, RuntimeError) as error:
            if isinstance(error, OSError) and is_disk_full(error):
                _remove_partials(folder)
                raise room_error(folder, facts.size, None, what) from error
            if _partial_bytes(folder) > before and attempt < ATTEMPTS:
                continue
            if _spoils_partial(error):
                _remove_partials(folder)
            raise SourceUnavailable(
                f"the download stopped ({_reason(error)}); "
                f"{_partial_bytes(folder):,} of {facts.size:,} bytes kept to go on from"
            ) from error
    raise AssertionError("unreachable: the last attempt returns or raises")


def _progress_class(sink: ProgressSink, step: str, total: int) -> Any:
    """A tqdm class for huggingface_hub's ``tqdm_class`` that tells ``sink`` the bytes received
    (about every half percent) and draws nothing: under the app, a bar on the terminal would
    tear the screen."""
    from huggingface_hub.utils import tqdm as hub_tqdm  # noqa: PLC0415 -- with huggingface_hub, only to download

    every = max(1, total // 200)

    class ToSink(hub_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.received = int(kwargs.get("initial") or 0)
            self.said = self.received
            sink(Progress(step, self.received, total, detail=f"from {HUB}"))

        def update(self, n: float | None = 1) -> bool | None:
            self.received += int(n or 0)
            if self.received - self.said >= every or self.received >= total:
                self.said = self.received
                sink(Progress(step, min(self.received, total), total, detail=f"from {HUB}"))
            return super().update(n)

    return ToSink


def _partials(folder: Path) -> list[Path]:
    return list((folder / ".cache").rglob("*.incomplete")) if folder.exists() else []


def _partial_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in _partials(folder))


def _remove_partials(folder: Path) -> None:
    for path in _partials(folder):
        path.unlink(missing_ok=True)


def _drop_overlong_partials(folder: Path, size: int) -> None:
    # more bytes than the file has cannot be resumed from (the Range would be refused)
    for path in _partials(folder):
        if path.stat().st_size > size:
            path.unlink(missing_ok=True)


def _spoils_partial(error: BaseException) -> bool:
    """Whether the bytes kept cannot be resumed from: the server refused their range (416), or
    huggingface_hub found the whole of another length (it raises a bare OSError for that)."""
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None) == 416 or type(error) is OSError


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
