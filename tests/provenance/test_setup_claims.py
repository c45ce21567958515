"""core.provenance.setup_claims: what a paper says its runs ran on and with, held to their records
and code — hardware, sizes, training length, the parts of the model — by general rules, sentence
by sentence, with no alarm for what is true, negated, cited or about others' work."""

from __future__ import annotations

import json
from pathlib import Path

from labtui.core.machine.hardware import GpuModel, Hardware
from labtui.core.provenance.setup_claims import recorded_setup, setup_defects
from labtui.core.workspace.run_folder import (
    FinalInfo,
    RunRecord,
    write_final_info,
    write_run_record,
)

NUMPY = """import numpy as np
N_TRAIN = 200
EPOCHS = 150
BATCH_SIZE = 32
LEARNING_RATE = 0.01
ACTIVATION = "relu"
def train():
    return np.tanh(0.5)
"""
TORCH = "import torch\nEPOCHS = 20\nmodel = torch.nn.Sequential(torch.nn.Linear(2, 64))\n"
CPU = Hardware("AMD EPYC 7763", 2, 24105, [])
A100 = Hardware("Intel Xeon Gold 6338", 16, 515000, [GpuModel("NVIDIA A100-SXM4-80GB", 81920.0)])


def project(tmp_path: Path, code: str, hardware: Hardware, cluster: dict | None = None) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "experiment.py").write_text(code)
    for run in ("run_0", "run_1"):
        write_final_info(root / run, FinalInfo.of_means({"moons": {"acc": 0.9}}))
        record = RunRecord(
            run_id=run,
            argv=["python", "experiment.py", f"--out_dir={run}"],
            hardware=hardware.to_json(),
            cluster=cluster or {},
        )
        write_run_record(root / run, record)
    return root


def problems(text: str, root: Path, *, others: bool = False) -> list[str]:
    return [d.problem for d in setup_defects(text, recorded_setup(root), others_part=others)]


def test_the_1_5b_models_invented_setups_are_named(tmp_path):
    root = project(tmp_path, NUMPY, CPU)
    # Recorded (moons b8, Related Work) and held out (issue 40, Experimental Setup).
    gpu, model = problems(
        "The experiments were conducted on a GPU with 16GB of memory and ran for 50 epochs. "
        "The model used was a simple feedforward network with ReLU units and batch normalization.",
        root,
        others=True,
    )
    assert "uses no GPU" in gpu and "50 epochs, which no setting of the runs holds" in gpu
    assert model.endswith(
        "runs used batch normalization (“batch normalization”), but their code has none."
    ), "ReLU: the code has relu"
    [invented] = problems(
        "We trained a convolutional neural network (CNN) with two convolutional layers, with the "
        "Adam optimizer and a learning rate of 0.001, in a distributed manner across multiple "
        "machines.",
        root,
    )
    for said in ("a convolutional network", "the Adam optimiser", "a learning rate of 0.001",
                 "every run ran on one machine"):  # fmt: skip
        assert said in invented, said


def test_what_the_records_and_code_bear_out_is_no_alarm(tmp_path):
    root = project(tmp_path, NUMPY, CPU)
    true = (
        "Every run ran on the AMD EPYC CPU with 2 cores and 23.5 GB of memory, no GPU. "
        "We trained for 150 epochs on 200 points with a batch size of 32 and a learning rate of "
        "0.01, with ReLU units."
    )
    assert problems(true, root) == []
    assert problems("We used no dropout and no batch normalization.", root) == [], "negated"
    assert problems("Batch normalization \\citep{ioffe2015} speeds up training.", root) == []
    assert problems("Dropout regularises wide networks.", root) == [], "about dropout, not us"
    assert problems("Prior work trained on a GPU for 50 epochs.", root, others=True) == []


def test_a_setting_named_as_the_code_names_it_is_held_to_the_values_the_runs_gave_it(tmp_path):
    root = project(tmp_path, NUMPY, CPU)
    # a 1.5B model's diffusion_2d conclusion, in the names of this code
    [said] = problems(
        "In particular, setting ACTIVATION = 'relu' with EPOCHS = 50 is identical to the "
        "baseline result.",
        root,
    )
    assert said.endswith(": it states EPOCHS = 50, but the runs had 150.")
    assert problems("The baseline sets EPOCHS = 150 and N\\_TRAIN of 200.", root) == []
    assert problems("A point x_1 = 5 lies on the moon.", root) == [], "no setting of the code"


def test_the_hardware_is_held_to_the_record_where_the_code_could_use_a_gpu(tmp_path):
    cpu_torch = project(tmp_path, TORCH, CPU)
    [said] = problems("The runs trained on an NVIDIA GPU.", cpu_torch)
    assert "every run ran on the CPU alone" in said
    gpu_root = tmp_path / "gpu"
    gpu_root.mkdir()
    on_a100 = project(gpu_root, TORCH, A100)
    assert problems("We trained on one NVIDIA A100 GPU with 80 GB of memory.", on_a100) == []
    assert "names a V100" in problems("We trained on a V100.", on_a100)[0]
    assert "matches no memory" in problems("The runs used a GPU with 24 GB of memory.", on_a100)[0]
    assert "cores" in problems("The runs used 64 CPU cores.", on_a100)[0]
    assert "names AMD" in problems("Our runs used an AMD CPU.", on_a100)[0]
    clustered = tmp_path / "cluster"
    clustered.mkdir()
    slurm = project(clustered, TORCH, A100, cluster={"backend": "slurm", "job_id": "7"})
    assert problems("The runs were distributed across multiple nodes.", slurm) == []


def test_a_run_recorded_before_the_hardware_was_kept_is_held_to_its_code_only(tmp_path):
    root = project(tmp_path, TORCH, CPU)
    for run in ("run_0", "run_1"):
        data = json.loads((root / run / "labtui_run.json").read_text())
        del data["hardware"]
        (root / run / "labtui_run.json").write_text(json.dumps(data))
    assert recorded_setup(root).hardware == ()
    assert problems("The runs trained on an NVIDIA GPU with 16 GB of memory.", root) == []
