"""The environment a run starts with, built from an allowlist.

labtui's own environment holds what a run has no business with: model providers' keys, but also
``HF_TOKEN``, ``WANDB_API_KEY``, a cloud's session token, a proxy with a password in it. A list
of known secrets is always one name short, so a run gets only what this module names:

* the locale (``LANG``, ``LANGUAGE``, ``LC_*``, ``TZ``), ``PATH``, ``HOME``, ``USER``/``LOGNAME``
  and ``TERM=dumb`` (a run writes into a pipe, not a terminal: no colour codes in its log);
* the interpreter's environment as the researcher activated it (``VIRTUAL_ENV``, ``CONDA_*``
  locations, ``PYENV_ROOT``/``PYENV_VERSION`` for pyenv's shims) and the dynamic linker's path
  (``LD_LIBRARY_PATH``: ``module load cuda`` puts CUDA there). ``PYTHONPATH``, ``PYTHONHOME``,
  ``PYTHONSTARTUP`` and ``PYTHONUSERBASE`` do *not* pass: they were set for the shell's (labtui's)
  interpreter, which is often not the experiment's version, and a PYTHONHOME for another Python
  stops the experiment's from starting at all; a researcher who means them lists them in
  ``[sandbox] pass_env`` or sets them in ``[experiment] env``;
* GPU and thread settings: ``CUDA_*``, ``CUDNN_*``, ``NVIDIA_*``, ``NCCL_*``, ROCm's, ``OMP_*``,
  ``KMP_*``, ``MKL_*``, ``NUMEXPR_*``, any ``*_NUM_THREADS``, the framework's allocator and
  compiler settings (``PYTORCH_*``, ``TORCH_*``, ``XLA_FLAGS``, ``JAX_*``), and a Slurm job's own
  ``SLURM_*`` on a compute node (``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` are then set over
  them by ``[experiment] threads``: ``thread_env``);
* cache locations (``HF_HOME``, ``TORCH_HOME``, ``XDG_CACHE_HOME``, ``MPLCONFIGDIR``,
  ``TRITON_CACHE_DIR`` …) and ``TMPDIR``. Under bubblewrap they are pointed inside the sandbox's
  private /tmp instead (``SANDBOX_LOCATIONS``): the real ones are hidden or read-only there;
* the CA bundles a network run needs behind a corporate proxy (paths, not secrets).

A name matched only by a prefix or suffix that still looks like a credential (``…TOKEN``,
``…SECRET``, ``…PASSWORD``, ``…API_KEY``) is dropped all the same. labtui's own ``LABTUI_*``
settings (its model, its key) never pass: the ``LABTUI_*`` a run sees are the run variables labtui
sets for it (``run_process``'s ``env``). On top come the names the researcher lists in
``[sandbox] pass_env`` (their values as labtui sees them), then the explicit ``env`` of the run
(``[experiment] env``, GPU lease, run variables), which always wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Always set: without it Python block-buffers a piped stdout and the log pane stays empty.
ALWAYS = {"PYTHONUNBUFFERED": "1"}
DEFAULTS = {"TERM": "dumb"}

PASSED_NAMES = frozenset(
    {
        "LANG", "LANGUAGE", "TZ", "PATH", "HOME", "USER", "LOGNAME",
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "CONDA_PYTHON_EXE",
        "CONDA_SHLVL", "PYENV_ROOT", "PYENV_VERSION", "LD_LIBRARY_PATH",
        "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
        "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "XLA_FLAGS",
        "HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
        "TRANSFORMERS_CACHE", "TRANSFORMERS_OFFLINE", "TORCH_HOME", "XDG_CACHE_HOME",
        "MPLCONFIGDIR", "MPLBACKEND", "TRITON_CACHE_DIR", "KERAS_HOME", "TMPDIR",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    }
)  # fmt: skip
PASSED_PREFIXES = (
    "LC_", "CUDA_", "CUDNN_", "NVIDIA_", "NCCL_", "HIP_", "ROCR_", "HSA_", "OMP_", "KMP_",
    "GOMP_", "MKL_", "NUMEXPR_", "PYTORCH_", "TORCH_", "JAX_", "SLURM_",
)  # fmt: skip
PASSED_SUFFIXES = ("_NUM_THREADS",)
# A prefix lets a whole family through; a credential that happens to share it still stops here.
CREDENTIAL_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "CREDENTIAL")

# Where caches go inside bubblewrap: the home folder there is an empty tmpfs and everything
# outside the project is read-only, so libraries that write a cache (matplotlib's fonts,
# Triton's kernels for torch.compile, a Hugging Face download) write into the private /tmp,
# which [sandbox] tmp_mb caps.
SANDBOX_LOCATIONS = {
    "TMPDIR": "/tmp",
    "XDG_CACHE_HOME": "/tmp/cache",
    "HF_HOME": "/tmp/cache/huggingface",
    "TORCH_HOME": "/tmp/cache/torch",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "TRITON_CACHE_DIR": "/tmp/triton-cache",
}


def allowed(name: str) -> bool:
    """Whether labtui passes ``name`` from its own environment to a run without being asked."""
    if name in PASSED_NAMES:
        return True
    if not (name.startswith(PASSED_PREFIXES) or name.endswith(PASSED_SUFFIXES)):
        return False
    return not any(word in name.upper() for word in CREDENTIAL_WORDS)


@dataclass(frozen=True)
class EnvPolicy:
    """What a run's environment is made of, besides the run's explicit ``env``."""

    pass_env: tuple[str, ...] = ()  # [sandbox] pass_env: names the researcher lets through
    locations: Mapping[str, str] | None = None  # set inside the sandbox (SANDBOX_LOCATIONS)

    def environment(
        self, explicit: Mapping[str, str] | None = None, source: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The run's whole environment: the allowlist from ``source`` (labtui's environment),
        the sandbox's locations, ``pass_env``, then ``explicit``, which wins."""
        source = os.environ if source is None else source
        merged = {name: value for name, value in source.items() if allowed(name)}
        merged.update(DEFAULTS)
        merged.update(self.locations or {})
        merged.update({name: source[name] for name in self.pass_env if name in source})
        merged.update(explicit or {})
        merged.update(ALWAYS)
        return merged

    def passed_names(self, source: Mapping[str, str] | None = None) -> list[str]:
        """The names a run gets before its explicit ``env`` (for doctor and the run's record;
        the values are never shown)."""
        return sorted(self.environment(None, source))

    def missing(self, source: Mapping[str, str] | None = None) -> list[str]:
        """``pass_env`` names that labtui's environment does not have: they reach no run."""
        source = os.environ if source is None else source
        return [name for name in self.pass_env if name not in source]


# What sizes a run's thread pools: OpenMP's (torch's intra-op pool, OpenBLAS's, numexpr's) and
# MKL's; torch reads them when it is imported, so they work for any framework and any script.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """The variables that hold a run to ``threads`` threads per pool."""
    return dict.fromkeys(THREAD_VARIABLES, str(max(1, threads)))


def run_environment(
    explicit: Mapping[str, str] | None = None, pass_env: Iterable[str] = ()
) -> dict[str, str]:
    """A run's environment outside any sandbox (no locations moved): the allowlist, ``pass_env``
    and ``explicit``."""
    return EnvPolicy(tuple(pass_env)).environment(explicit)
