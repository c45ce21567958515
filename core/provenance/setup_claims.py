"""What a paper says its runs ran on and with, held to what the runs recorded and what their code
holds: the hardware (a GPU, its model and memory, cores, several machines), the data sizes, the
training length, batch size and learning rate, and the parts of the model and its training
(batch normalisation, convolutions, Adam, dropout …).

Qwen2.5-Coder-1.5B wrote "conducted on a GPU with 16GB of memory and ran for 50 epochs" and
"batch normalization" about CPU-only runs of 150 epochs whose code has no normalisation, and, of
a NumPy logistic regression, "a convolutional neural network (CNN) with two convolutional layers
… the Adam optimizer with a learning rate of 0.001 … run in a distributed manner across multiple
machines". Only sentences about this work are read: in the Background and Related Work, those
that say "we", "our", "the experiments" or "the runs"; anywhere, none that cites a paper; and a
negated part ("without dropout") claims nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..latex.source import blank_out
from ..machine.hardware import Hardware
from ..prose.defect import Defect, clipped, sentences_at
from ..runs.script_constants import command_and_commit, run_settings, script_code, script_of
from ..workspace.run_folder import RunFolderError, RunRecord, read_run_record, result_folders

UNSUPPORTED = "unsupported"
MEMORY_TOLERANCE = 0.1  # "16 GB" of a 15.9 GiB card is that card; of a 24 GB machine it is not

_OTHERS_PARTS = ("background", "related")
_THIS_WORK = re.compile(
    r"\b(?:we|our|us|this (?:paper|work|study)|the (?:experiments?|runs?|baseline|training runs?"
    r"|(?:model|network) (?:we|used|was|is))|were (?:conducted|run|performed|trained)"
    r"|was (?:trained|run))\b",
    re.I,
)
_CODE_WRITTEN = re.compile(r"\\labtuistep\{[^{}]*\}")
_CITES = re.compile(r"\\cite\w*\{|\[\d+(?:[,–-]\s*\d+)*\]|et al\.")
_NEGATED = re.compile(
    r"\b(?:without|no|not|instead of|rather than|unlike|neither|nor|never|lacks?|omit\w*"
    r"|(?:meant|intended|aimed|tried|planned|supposed|failed) to)\W+(?:\w+\W+){0,3}$",
    re.I,
)
# A part the runs used, not one the paper talks about ("we measure early stopping"): a verb of
# use shortly before it ("trained a CNN", "with batch normalization", "combining dropout").
_USED = re.compile(
    r"\b(?:use[sd]?|using|with|employ\w*|appl(?:y|ied|ies|ying)|add(?:s|ed|ing)?|adopt\w*"
    r"|includ\w*|train(?:s|ed|ing)?|combin\w*|buil[dt]\w*|rel(?:y|ies|ied) on)\b[^.;]{0,60}$",
    re.I,
)

_GPU = re.compile(
    r"\b(?:GPUs?|CUDA|NVIDIA|Tesla|[AHV]100|RTX\s?\d{3,4}|GTX\s?\d{3,4}|TPUs?|graphics cards?)\b"
)
_GPU_MODEL = re.compile(r"\b([AHV]100|RTX\s?\d{3,4}|GTX\s?\d{3,4}|T4|L4|A10G?|TPU)\b")
_MEMORY = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:GB|GiB|gigabytes?|G\b)(?:\s+(?:of\s+)?(?:memory|RAM|VRAM))?"
)
_CORES = re.compile(r"(\d+)[\s-]*(?:CPU\s+)?cores?\b", re.I)
_MANY_MACHINES = re.compile(
    r"\b(?:distributed|multiple (?:machines|nodes|GPUs|servers)|multi-(?:GPU|node)|"
    r"several (?:machines|nodes|GPUs)|cluster of|data[- ]parallel)\b",
    re.I,
)
# Code that can use a GPU imports a framework that drives one, or names CUDA itself.
_GPU_CODE = re.compile(
    r"\b(?:import|from)\s+(?:torch|jax|tensorflow|cupy|numba|mlx|triton|pycuda|keras|paddle)\b|cuda",
    re.I,
)
_CPU_MAKER = re.compile(r"\b(Intel|AMD|Xeon|EPYC|Ryzen|Core i\d|Apple M\d|Graviton|ARM)\b")
_COUNTED = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s+(?:training\s+|test\s+|validation\s+|time\s+|diffusion\s+)?"
    r"(epochs?|iterations?|steps|updates|samples|data points|points|examples|images|sentences|"
    r"instances|documents)\b",
    re.I,
)
_NAMED_VALUE = re.compile(
    r"\b(batch size|learning rate|weight decay|hidden (?:units|size|dimension)|momentum)"
    r"\s+(?:of|is|was|=|set to|is set to|was set to)?\s*\$?(\d+(?:\.\d+)?(?:[eE]-?\d+)?)",
    re.I,
)
# A setting by its name in the code and a value: "NUM_TIMESTEPS = 50", "N_TRAIN of 200"
_CODE_SETTING = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]+|[A-Z][A-Z0-9]{2,})\s*(?:=|:|of|is|was|set to|to)\s*"
    r"[`'’]?(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)(?![\d.]*\w)"
)
# A part of the model or its training, and how code that has it spells it (lower case).
_PARTS = {
    "batch normalization": (r"batch[ -]?normali[sz]ation|batchnorm", ("batchnorm", "batch_norm")),
    "layer normalization": (r"layer[ -]?normali[sz]ation|layernorm", ("layernorm", "layer_norm")),
    "dropout": (r"dropout", ("dropout",)),
    "a convolutional network": (r"convolution\w*|\bCNNs?\b", ("conv",)),
    "a recurrent network": (r"\bLSTMs?\b|\bGRUs?\b|recurrent", ("lstm", "gru", "rnn")),
    "attention": (
        r"self-attention|\battention\b|transformer",
        ("attention", "attn", "transformer"),
    ),
    "residual connections": (r"residual|skip connections?|ResNet", ("residual", "resnet", "skip")),
    "the Adam optimiser": (r"\bAdam(?!W)\b", ("adam",)),
    "the AdamW optimiser": (r"\bAdamW\b", ("adamw",)),
    "SGD": (r"\bSGD\b|stochastic gradient descent", ("sgd", "gradient")),
    "RMSprop": (r"RMSprop", ("rmsprop",)),
    "data augmentation": (r"data augmentation", ("augment",)),
    "early stopping": (r"early stopping", ("early_stop", "patience", "early stop", "earlystop")),
    "ReLU units": (r"\bReLUs?\b", ("relu",)),
    "GELU units": (r"\bGELUs?\b", ("gelu",)),
    "a learning-rate schedule": (
        r"cosine (?:annealing|schedule)|warm-?up",
        ("cosine", "warmup", "schedule"),
    ),
}


@dataclass(frozen=True)
class RecordedSetup:
    """What the finished runs recorded of their setup, and their code."""

    hardware: tuple[Hardware, ...] = ()  # of the runs whose record keeps it
    clustered: bool = False  # a run ran as a Slurm job
    settings: frozenset[float] = frozenset()  # every number the runs' settings hold
    code: str = ""  # the runs' scripts as they ran, lower case
    runs: tuple[str, ...] = field(default_factory=tuple)
    # each setting by its name in the code, with every value a run gave it
    named: Mapping[str, frozenset[float]] = field(default_factory=dict)

    @property
    def gpus(self) -> list[str]:
        return [g.name for h in self.hardware for g in h.gpus]


def recorded_setup(root: Path) -> RecordedSetup:
    """The project's finished runs' hardware, settings and code."""
    root = Path(root)
    hardware: list[Hardware] = []
    settings: set[float] = set()
    named: dict[str, set[float]] = {}
    code: list[str] = []
    runs: list[str] = []
    clustered = False
    for run in result_folders(root):
        runs.append(run.name)
        ran = run_settings(root, run)
        settings.update(ran.values())
        for name, value in ran.items():
            named.setdefault(name, set()).add(value)
        argv, commit = command_and_commit(run)
        code.append(script_code(root, script_of(argv), commit))
        try:
            record = read_run_record(run)
        except RunFolderError:
            continue  # no record: the code still says what the run could use
        if isinstance(record, RunRecord):
            found = Hardware.from_json(record.hardware)
            if found.known:
                hardware.append(found)
            clustered = clustered or bool(record.cluster)
    return RecordedSetup(
        tuple(hardware),
        clustered,
        frozenset(settings),
        "\n".join(code).lower(),
        tuple(runs),
        {name: frozenset(values) for name, values in named.items()},
    )


def setup_defects(text: str, setup: RecordedSetup, *, others_part: bool = False) -> list[Defect]:
    """Each sentence of ``text`` about this work that states what the runs did not have, one
    for each thing it states. ``others_part``: the text is a Background or Related Work, where
    only sentences in this work's own words ("we", "the experiments") count; what the runs
    used (Adam, dropout) is claimed only in such sentences anywhere ("Dropout prevents
    overfitting" says what dropout does)."""
    found = []
    text = _CODE_WRITTEN.sub(blank_out, text)  # labtui's own facts, from the records
    for at, sentence in sentences_at(text):
        if _CITES.search(sentence):
            continue
        ours = bool(_THIS_WORK.search(sentence))
        if others_part and not ours:
            continue
        problem = _unsupported(sentence, setup, ours)
        if problem:
            found.append(_defect(text, at, sentence, problem, setup))
    return found


def _unsupported(sentence: str, setup: RecordedSetup, ours: bool) -> str:
    """What the sentence claims that the records and code do not bear out, every such thing;
    ''."""
    checks = [_hardware_claim, _counted_claim, _named_value_claim, _code_setting_claim]
    problems = [check(sentence, setup) for check in ([*checks, _part_claim] if ours else checks)]
    return "; ".join(p for p in problems if p)


def _hardware_claim(sentence: str, setup: RecordedSetup) -> str:
    gpu = _GPU.search(sentence)
    if (
        gpu
        and not _negated(sentence, gpu.start())
        and setup.code
        and not _GPU_CODE.search(setup.code)
    ):
        return f"it names “{gpu.group(0)}”, but the runs' code uses no GPU (no GPU framework in it)"
    if not setup.hardware:
        return ""  # runs recorded before labtui kept the hardware: nothing more to hold it to
    gpus = setup.gpus
    if gpu and not _negated(sentence, gpu.start()):
        if not gpus:
            return f"it names “{gpu.group(0)}”, but every run ran on the CPU alone"
        model = _GPU_MODEL.search(sentence)
        if model and not any(
            model.group(1).replace(" ", "").lower() in g.replace(" ", "").lower() for g in gpus
        ):
            return f"it names a {model.group(1)}, but the runs had {', '.join(sorted(set(gpus)))}"
    many = _MANY_MACHINES.search(sentence)
    if many and not _negated(sentence, many.start()) and not setup.clustered and len(set(gpus)) < 2:
        return f"it says “{many.group(0)}”, but every run ran on one machine"
    memory = _MEMORY.search(sentence)
    if memory and re.search(r"memory|RAM|VRAM|GPU", sentence, re.I):
        stated = float(memory.group(1))
        recorded = [h.memory_mb / 1024 for h in setup.hardware]
        recorded += [g.memory_mb / 1024 for h in setup.hardware for g in h.gpus]
        if not any(abs(stated - gb) <= MEMORY_TOLERANCE * gb for gb in recorded if gb):
            return f"it states {memory.group(0).strip()}, which matches no memory the runs had"
    cores = _CORES.search(sentence)
    if cores and int(cores.group(1)) not in {h.cores for h in setup.hardware}:
        return f"it states {cores.group(0)}, but the runs had {', '.join(str(h.cores) for h in setup.hardware[:1])}"
    maker = _CPU_MAKER.search(sentence)
    if maker and not any(maker.group(1).lower() in h.cpu.lower() for h in setup.hardware):
        return (
            f"it names {maker.group(1)}, but the runs' CPU was {setup.hardware[0].cpu or 'another'}"
        )
    return ""


def _counted_claim(sentence: str, setup: RecordedSetup) -> str:
    for found in _COUNTED.finditer(sentence):
        value = float(found.group(1).replace(",", ""))
        if value not in setup.settings and not _negated(sentence, found.start()):
            return f"it states {found.group(0)}, which no setting of the runs holds"
    return ""


def _named_value_claim(sentence: str, setup: RecordedSetup) -> str:
    for found in _NAMED_VALUE.finditer(sentence):
        value = float(found.group(2))
        if not _holds(value, setup.settings):
            return f"it states a {found.group(1)} of {found.group(2)}, which no setting of the runs holds"
    return ""


def _code_setting_claim(sentence: str, setup: RecordedSetup) -> str:
    """A setting named as the code names it, with a value no run gave it: "setting
    NUM_TIMESTEPS = 50" where every run had 100 (a 1.5B model's diffusion_2d conclusion)."""
    plain = sentence.replace("\\_", "_")
    for found in _CODE_SETTING.finditer(plain):
        had = setup.named.get(found.group(1))
        value = float(found.group(2))
        if had and not _holds(value, had):
            values = ", ".join(f"{h:g}" for h in sorted(had))
            return f"it states {found.group(1)} = {found.group(2)}, but the runs had {values}"
    return ""


def _holds(value: float, values: frozenset[float]) -> bool:
    """Whether ``value`` is one of ``values``, as a float read from text can be."""
    return any(abs(value - v) <= 1e-9 * max(1.0, abs(v)) for v in values)


def _part_claim(sentence: str, setup: RecordedSetup) -> str:
    if not setup.code:
        return ""
    said = []
    for name, (words, spelled) in _PARTS.items():
        found = re.search(words, sentence, re.I)
        if (
            found
            and _USED.search(sentence[: found.start()])
            and not _negated(sentence, found.start())
            and not any(s in setup.code for s in spelled)
        ):
            said.append(f"{name} (“{found.group(0)}”)")
    return f"it says the runs used {', '.join(said)}, but their code has none" if said else ""


def _negated(sentence: str, at: int) -> bool:
    return bool(_NEGATED.search(sentence[:at]))


def _defect(text: str, at: int, sentence: str, problem: str, setup: RecordedSetup) -> Defect:
    quoted = clipped(sentence)
    facts = setup.hardware[0].described() if setup.hardware else "the run records"
    return Defect(
        UNSUPPORTED,
        max(at, 0),
        quoted,
        f"“{quoted}”: {problem}.",
        f"State only what the runs recorded (labtui_run.json: {facts}) and what their code does.",
    )
