"""Grokking on algorithmic tasks: a small transformer learns modular arithmetic, in PyTorch.

Run as ``python experiment.py --out_dir=run_0``. For every operation in OPERATIONS and every
seed it splits the full table of equations "x o y = z" into a training and a validation part,
trains a two-layer transformer with AdamW on the training part and tracks accuracy and loss on
both. It writes:

- ``<out_dir>/final_info.json``: {operation: {"means": {...}, "stderrs": {...},
  "final_info_dict": {metric: [one value per seed]}}}  (The AI Scientist's result format)
- ``<out_dir>/all_results.json``: train/val accuracy and loss curves of every seed (plot.py)

Set the environment variable LABTUI_SMOKE=1 for a tiny run (a few seconds on a CPU) that checks
the code path; without it the run is the real experiment, sized for a GPU (minutes).

labtui may set two more (README, "Run budget and seeds"; labtui_run.py reads them):
LABTUI_RUN_BUDGET_S, the seconds the whole run may take (training stops early, at TRAIN_SHARE of
it, so that the results are written in time), and LABTUI_SEED, an offset that gives the run
other training seeds on the same splits. Without them the run is the one described above.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time

import numpy as np

# cuBLAS needs this to be deterministic on a GPU; it must be set before CUDA starts
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
from labtui_run import SEED_VAR, Budget, aligned, out_of_time, read_run_env, seeds_of
from torch import nn

# ---------------------------------------------------------------------------------------------
# Hyperparameters: change these to run an experiment.
# ---------------------------------------------------------------------------------------------
# Tasks
OPERATIONS = ["x_plus_y", "x_minus_y", "x_div_y", "permutation"]
PRIME = 97  # modulus p of the arithmetic tasks (x, y in 0..p-1; for x_div_y, y in 1..p-1)
PERMUTATION_SIZE = (
    5  # permutation task: composition of permutations of this many elements (5! = 120)
)
TRAIN_FRACTION = 0.5  # fraction of all equations used for training; the rest is validation
DATA_SEED = 0  # the split is the same for every training seed, so runs are comparable

# Model: a decoder-only transformer reading "x o y =" and predicting z at the last position
NUM_LAYERS = 2
D_MODEL = 128
NUM_HEADS = 4
DROPOUT = 0.0
CAUSAL = True  # causal attention mask (as in a language model); False lets every token see all

# Training
NUM_STEPS = 7500
BATCH_SIZE = 512
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.5  # AdamW's decoupled weight decay: the main driver of grokking
ADAM_BETAS = (0.9, 0.98)
WARMUP_STEPS = 50  # linear learning-rate warm-up, then constant

# Evaluation and logging
EVAL_EVERY = 100  # evaluate on the full training and validation sets every EVAL_EVERY steps
GROK_THRESHOLD = 0.99  # the grokking step is the first evaluation with val_acc >= this
N_SEEDS = 3  # seeds 0..N_SEEDS-1; LABTUI_SEED=k gives seeds k*N_SEEDS..(k+1)*N_SEEDS-1 instead
LOG_EVERY = 500  # print a progress line every LOG_EVERY steps

# Run budget (LABTUI_RUN_BUDGET_S): NUM_STEPS stays the cap, the budget may stop training earlier
TRAIN_SHARE = 0.85  # training stops at this fraction of the budget; the rest evaluates and writes

# LABTUI_SMOKE=1: a tiny run that only checks the code path (a few seconds on a CPU).
SMOKE = os.environ.get("LABTUI_SMOKE") == "1"
if SMOKE:
    OPERATIONS = ["x_plus_y", "x_div_y"]
    PRIME = 23
    D_MODEL = 64
    NUM_STEPS, BATCH_SIZE = 100, 128
    N_SEEDS = 1
    EVAL_EVERY, LOG_EVERY = 20, 50

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
CPU_THREADS = 1  # torch threads on a CPU: the models are tiny, extra threads mostly contend


# ---------------------------------------------------------------------------------------------
# Data: every equation of an operation's table, as token sequences [x, op, y, =] -> z
# ---------------------------------------------------------------------------------------------
def equations(operation: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(operands (n, 2), answers (n,), number of distinct operand/answer values)."""
    p = PRIME
    if operation == "permutation":
        perms = list(itertools.permutations(range(PERMUTATION_SIZE)))
        index = {perm: i for i, perm in enumerate(perms)}
        pairs = [(a, b) for a in range(len(perms)) for b in range(len(perms))]
        # z = x composed with y: (x o y)(i) = x(y(i))
        answers = [index[tuple(perms[a][j] for j in perms[b])] for a, b in pairs]
        return np.array(pairs), np.array(answers), len(perms)
    if operation == "x_div_y":
        pairs = [(x, y) for x in range(p) for y in range(1, p)]
        # x / y mod p = x * y^(p-2) mod p (Fermat's little theorem; p must be prime)
        answers = [(x * pow(y, p - 2, p)) % p for x, y in pairs]
        return np.array(pairs), np.array(answers), p
    pairs = [(x, y) for x in range(p) for y in range(p)]
    if operation == "x_plus_y":
        answers = [(x + y) % p for x, y in pairs]
    elif operation == "x_minus_y":
        answers = [(x - y) % p for x, y in pairs]
    else:
        raise ValueError(
            f"unknown operation {operation!r}: use x_plus_y, x_minus_y, x_div_y or permutation"
        )
    return np.array(pairs), np.array(answers), p


def make_data(operation: str) -> dict:
    pairs, answers, n_values = equations(operation)
    op_token, eq_token = n_values, n_values + 1  # vocabulary: values, then "o" and "="
    n = len(pairs)
    inputs = np.stack(
        [pairs[:, 0], np.full(n, op_token), pairs[:, 1], np.full(n, eq_token)], axis=1
    )
    rng = np.random.default_rng([DATA_SEED, sum(map(ord, operation))])
    order = rng.permutation(n)
    n_train = round(TRAIN_FRACTION * n)
    to_tensor = lambda a: torch.from_numpy(a).long().to(DEVICE)  # noqa: E731
    return {
        "x_train": to_tensor(inputs[order[:n_train]]),
        "y_train": to_tensor(answers[order[:n_train]]),
        "x_val": to_tensor(inputs[order[n_train:]]),
        "y_val": to_tensor(answers[order[n_train:]]),
        "vocab_size": n_values + 2,
        "n_classes": n_values,
    }


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------
class Block(nn.Module):
    """Pre-norm transformer block: self-attention and a 4x MLP, each with a residual."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = nn.MultiheadAttention(D_MODEL, NUM_HEADS, dropout=DROPOUT, batch_first=True)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(
            nn.Linear(D_MODEL, 4 * D_MODEL),
            nn.GELU(),
            nn.Linear(4 * D_MODEL, D_MODEL),
            nn.Dropout(DROPOUT),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    def __init__(self, vocab_size: int, n_classes: int, seq_len: int = 4) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, D_MODEL)
        self.position_embedding = nn.Embedding(seq_len, D_MODEL)
        self.blocks = nn.ModuleList([Block() for _ in range(NUM_LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, n_classes)
        mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", mask)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        mask = self.causal_mask if CAUSAL else None
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x[:, -1]))  # logits for the answer, read at "="


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------
@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) over a whole split, in chunks."""
    model.eval()
    correct, loss_sum = 0, 0.0
    for i in range(0, len(x), 4096):
        logits = model(x[i : i + 4096])
        loss_sum += float(nn.functional.cross_entropy(logits, y[i : i + 4096], reduction="sum"))
        correct += int((logits.argmax(dim=1) == y[i : i + 4096]).sum())
    model.train()
    return correct / len(x), loss_sum / len(x)


def train(operation: str, seed: int, data: dict, deadline: float | None = None) -> dict:
    """Train one transformer for NUM_STEPS steps, or fewer when the run budget's deadline passes
    (at least one, then a last evaluation); return its final metrics and curves."""
    torch.manual_seed(seed)
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    model = Transformer(data["vocab_size"], data["n_classes"]).to(DEVICE)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, betas=ADAM_BETAS, weight_decay=WEIGHT_DECAY
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / max(WARMUP_STEPS, 1))
    )
    x_train, y_train = data["x_train"], data["y_train"]
    batch_size = min(BATCH_SIZE, len(x_train))
    curves: dict[str, list] = {k: [] for k in ("step", "train_acc", "train_loss", "val_acc")}
    curves["val_loss"] = []
    grok_step: int | None = None
    start = time.perf_counter()
    model.train()
    for step in range(1, NUM_STEPS + 1):
        idx = torch.randint(0, len(x_train), (batch_size,), generator=generator, device=DEVICE)
        loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        stop = step < NUM_STEPS and out_of_time(deadline)
        if step % EVAL_EVERY == 0 or step == NUM_STEPS or stop:
            train_acc, train_loss = evaluate(model, x_train, y_train)
            val_acc, val_loss = evaluate(model, data["x_val"], data["y_val"])
            for key, value in zip(
                curves, (step, train_acc, train_loss, val_acc, val_loss), strict=True
            ):
                curves[key].append(value)
            if grok_step is None and val_acc >= GROK_THRESHOLD:
                grok_step = step
        if step % LOG_EVERY == 0 or step == NUM_STEPS or stop:
            print(
                f"op {operation} seed {seed} step {step}/{NUM_STEPS} "
                f"train_loss {curves['train_loss'][-1]:.4f} train_acc {curves['train_acc'][-1]:.4f} "
                f"val_loss {curves['val_loss'][-1]:.4f} val_acc {curves['val_acc'][-1]:.4f}",
                flush=True,
            )
        if stop:
            print(
                f"budget: stopped early after {step}/{NUM_STEPS} steps "
                f"(op {operation} seed {seed})",
                flush=True,
            )
            break
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    metrics = {
        "final_train_acc": curves["train_acc"][-1],
        "final_val_acc": curves["val_acc"][-1],
        "final_train_loss": curves["train_loss"][-1],
        "final_val_loss": curves["val_loss"][-1],
        # never reaching the threshold counts as NUM_STEPS (a censored value): see "grokked";
        # so does a run the budget stopped before it grokked
        "step_val_acc_99": grok_step if grok_step is not None else NUM_STEPS,
        "grokked": 1.0 if grok_step is not None else 0.0,
        "train_time_s": time.perf_counter() - start,
    }
    return {"metrics": metrics, "curves": curves, "steps": curves["step"][-1]}


def summarize(results: list[dict]) -> dict:
    """The AI Scientist's format: means, standard errors (std / sqrt(n)) and per-seed values."""
    per_seed = {m: [float(r["metrics"][m]) for r in results] for m in results[0]["metrics"]}
    n = len(results)
    return {
        "means": {f"{m}_mean": float(np.mean(v)) for m, v in per_seed.items()},
        "stderrs": {f"{m}_stderr": float(np.std(v) / np.sqrt(n)) for m, v in per_seed.items()},
        "final_info_dict": per_seed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out_dir", type=str, default="run_0", help="where results are written")
    args = parser.parse_args()
    budget_s, seed_offset = read_run_env()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if DEVICE.type == "cpu":
        torch.set_num_threads(CPU_THREADS)
    print(f"device {DEVICE.type} smoke {int(SMOKE)} operations {','.join(OPERATIONS)}", flush=True)
    seeds = seeds_of(seed_offset, N_SEEDS)
    budget = Budget(budget_s, train_share=TRAIN_SHARE, trainings=len(OPERATIONS) * len(seeds))
    print(f"seeds {seeds} (offset {seed_offset} from {SEED_VAR})", flush=True)
    print(budget.describe(), flush=True)

    final_info: dict[str, dict] = {}
    all_results: dict[str, dict] = {}
    for operation in OPERATIONS:
        data = make_data(operation)
        results = [train(operation, seed, data, budget.next_deadline()) for seed in seeds]
        final_info[operation] = {
            **summarize(results),
            "seeds": seeds,
            "budget": budget.record([r["steps"] for r in results], NUM_STEPS, "steps"),
        }
        curves = [r["curves"] for r in results]
        steps = [c["step"] for c in curves]
        all_results[operation] = {"seeds": seeds, "steps": aligned(steps, steps)[0]}
        for key in ("train_acc", "train_loss", "val_acc", "val_loss"):
            all_results[operation][key] = aligned(steps, [c[key] for c in curves])[1]

    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
        json.dump(final_info, f, indent=2)
    with open(os.path.join(args.out_dir, "all_results.json"), "w") as f:
        json.dump(all_results, f)
    for operation, entry in final_info.items():
        means = entry["means"]
        print(
            f"final {operation} " + " ".join(f"{k} {v:.4f}" for k, v in means.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
