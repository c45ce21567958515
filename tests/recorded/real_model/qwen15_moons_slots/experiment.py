"""Two-moons classification with a one-hidden-layer MLP written in NumPy.

Run as ``python experiment.py --out_dir=run_0``. For each of N_SEEDS seeds it trains the network
on the same noisy two-moons data set and writes:

- ``<out_dir>/final_info.json``: {"moons": {"means": {...}, "stderrs": {...},
  "final_info_dict": {metric: [one value per seed]}}}  (The AI Scientist's result format)
- ``<out_dir>/all_results.json``: per-epoch train loss and test accuracy of every seed (plot.py)

Only NumPy and the standard library are used, so it runs in seconds on any CPU.

labtui may set two environment variables (README, "Run budget and seeds"), which labtui_run.py
beside this file reads: LABTUI_RUN_BUDGET_S, the seconds the whole run may take (training stops
early, at TRAIN_SHARE of it, so that the results are written in time), and LABTUI_SEED, an offset
that gives the run other training seeds on the same data. Without them the run is the one
described above.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from labtui_run import SEED_VAR, Budget, out_of_time, read_run_env, seeds_of

#-----------------------------
# Hyperparameters: change these to run an experiment.
#-----------------------------
# Data
N_TRAIN = 200  # training points (small on purpose: regularisation and capacity matter)
N_TEST = 1000  # test points, drawn from the same distribution
NOISE = 0.25  # standard deviation of the Gaussian noise added to the moon coordinates
LABEL_NOISE = 0.0  # fraction of training labels flipped at random (test labels stay clean)
DATA_SEED = 0  # the data set is the same for every training seed, so runs are comparable

# Model
HIDDEN_UNITS = 32
ACTIVATION = "tanh"  # "tanh" or "relu"

# Training
OPTIMIZER = "adam"  # "adam" or "sgd" (SGD uses MOMENTUM)
LEARNING_RATE = 0.01
MOMENTUM = 0.9
BATCH_SIZE = 32
EPOCHS = 150
WEIGHT_DECAY = 0.0  # L2 penalty on the weight matrices (not the biases), added to the gradient
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8

# Seeds
N_SEEDS = 3  # seeds 0..N_SEEDS-1; LABTUI_SEED=k gives seeds k*N_SEEDS..(k+1)*N_SEEDS-1 instead
LOG_EVERY = 25  # print a progress line every LOG_EVERY epochs

# Run budget (LABTUI_RUN_BUDGET_S): EPOCHS stays the cap, the budget may stop training earlier
TRAIN_SHARE = 0.85  # training stops at this fraction of the budget; the rest evaluates and writes

DATASET = "moons"


def padded(curves: list[list[float]]) -> list[list[float | None]]:
    """Per-seed curves as long as the longest, None (null in JSON) after a seed's last epoch:
    the budget may stop seeds after different numbers of epochs. plot.py skips the nulls."""
    longest = max(len(c) for c in curves)
    return [c + [None] * (longest - len(c)) for c in curves]


#-----------------------------
# Data
#-----------------------------
def make_moons(n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles in 2-D, labels 0 (upper moon) and 1 (lower moon)."""
    n_upper = n // 2
    n_lower = n - n_upper
    t_upper = rng.uniform(0.0, np.pi, n_upper)
    t_lower = rng.uniform(0.0, np.pi, n_lower)
    upper = np.stack([np.cos(t_upper), np.sin(t_upper)], axis=1)
    lower = np.stack([1.0 - np.cos(t_lower), 0.5 - np.sin(t_lower)], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(0.0, noise, size=(n, 2))
    y = np.concatenate([np.zeros(n_upper, dtype=np.int64), np.ones(n_lower, dtype=np.int64)])
    order = rng.permutation(n)
    return x[order], y[order]


def flip_labels(y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    flipped = y.copy()
    n_flip = round(fraction * len(y))
    if n_flip:
        idx = rng.choice(len(y), size=n_flip, replace=False)
        flipped[idx] = 1 - flipped[idx]
    return flipped


def make_data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(DATA_SEED)
    x_train, y_train = make_moons(N_TRAIN, NOISE, rng)
    x_test, y_test = make_moons(N_TEST, NOISE, rng)
    y_train = flip_labels(y_train, LABEL_NOISE, rng)
    # Standardise with training statistics only.
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8
    return {
        "x_train": (x_train - mean) / std,
        "y_train": y_train,
        "x_test": (x_test - mean) / std,
        "y_test": y_test,
    }


#-----------------------------
# Model: x -> hidden (ACTIVATION) -> 2 logits -> softmax cross-entropy
#-----------------------------
def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    # Glorot-style scaling keeps tanh units out of saturation at the start.
    return {
        "W1": rng.normal(0.0, np.sqrt(2.0 / (2 + HIDDEN_UNITS)), size=(2, HIDDEN_UNITS)),
        "b1": np.zeros(HIDDEN_UNITS),
        "W2": rng.normal(0.0, np.sqrt(2.0 / (HIDDEN_UNITS + 2)), size=(HIDDEN_UNITS, 2)),
        "b2": np.zeros(2),
    }


def activate(z: np.ndarray) -> np.ndarray:
    return np.tanh(z) if ACTIVATION == "tanh" else np.maximum(z, 0.0)


def activate_grad(z: np.ndarray, a: np.ndarray) -> np.ndarray:
    return 1.0 - a**2 if ACTIVATION == "tanh" else (z > 0.0).astype(z.dtype)


def forward(params: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, dict]:
    z1 = x @ params["W1"] + params["b1"]
    a1 = activate(z1)
    # Add dropout
    if np.random.rand() < 0.2:
        a1 *= 0.0
    logits = a1 @ params["W2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)  # numerically stable softmax
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs, {"x": x, "z1": z1, "a1": a1}


def cross_entropy(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(probs[np.arange(len(y)), y] + 1e-12)))


def backward(
    params: dict[str, np.ndarray], probs: np.ndarray, cache: dict, y: np.ndarray
) -> dict[str, np.ndarray]:
    n = len(y)
    d_logits = probs.copy()
    d_logits[np.arange(n), y] -= 1.0
    d_logits /= n
    d_a1 = d_logits @ params["W2"].T
    d_z1 = d_a1 * activate_grad(cache["z1"], cache["a1"])
    grads = {
        "W2": cache["a1"].T @ d_logits,
        "b2": d_logits.sum(axis=0),
        "W1": cache["x"].T @ d_z1,
        "b1": d_z1.sum(axis=0),
    }
    for name in ("W1", "W2"):
        grads[name] += WEIGHT_DECAY * params[name]
    return grads


def accuracy(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    probs, _ = forward(params, x)
    return float(np.mean(probs.argmax(axis=1) == y))


#-----------------------------
# Optimisers
#-----------------------------
class Adam:
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        beta1, beta2 = ADAM_BETAS
        self.t += 1
        for k in params:
            self.m[k] = beta1 * self.m[k] + (1 - beta1) * grads[k]
            self.v[k] = beta2 * self.v[k] + (1 - beta2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - beta1**self.t)
            v_hat = self.v[k] / (1 - beta2**self.t)
            params[k] -= LEARNING_RATE * m_hat / (np.sqrt(v_hat) + ADAM_EPS)


class SGD:
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.velocity = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        for k in params:
            self.velocity[k] = MOMENTUM * self.velocity[k] - LEARNING_RATE * grads[k]
            params[k] += self.velocity[k]


def make_optimizer(params: dict[str, np.ndarray]) -> Adam | SGD:
    if OPTIMIZER == "adam":
        return Adam(params)
    if OPTIMIZER == "sgd":
        return SGD(params)
    raise ValueError(f"unknown OPTIMIZER {OPTIMIZER!r}: use 'adam' or 'sgd'")


#-----------------------------
# Training
#-----------------------------
def train(seed: int, data: dict[str, np.ndarray], deadline: float | None = None) -> dict:
    """Train one network for EPOCHS epochs, or fewer when the run budget's deadline passes (at
    least one); return its final metrics and per-epoch curves."""
    rng = np.random.default_rng(seed)
    params = init_params(rng)
    optimizer = make_optimizer(params)
    x_train, y_train = data["x_train"], data["y_train"]
    curves: dict[str, list[float]] = {"train_loss": [], "test_accuracy": []}
    start = time.perf_counter()
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(len(x_train))
        for i in range(0, len(order), BATCH_SIZE):
            batch = order[i : i + BATCH_SIZE]
            probs, cache = forward(params, x_train[batch])
            optimizer.step(params, backward(params, probs, cache, y_train[batch]))
        # Full-batch data loss (without the weight-decay term) and clean test accuracy.
        train_loss = cross_entropy(forward(params, x_train)[0], y_train)
        test_accuracy = accuracy(params, data["x_test"], data["y_test"])
        curves["train_loss"].append(train_loss)
        curves["test_accuracy"].append(test_accuracy)
        stop = epoch < EPOCHS and out_of_time(deadline)
        if epoch % LOG_EVERY == 0 or epoch == EPOCHS or stop:
            print(
                f"seed {seed} epoch {epoch:4d}/{EPOCHS} "
                f"train_loss {train_loss:.4f} test_accuracy {test_accuracy:.4f}"
            )
        if stop:
            print(f"budget: stopped early after {epoch}/{EPOCHS} epochs (seed {seed})")
            break
    train_time_s = time.perf_counter() - start
    return {
        "train_loss": curves["train_loss"][-1],
        "test_accuracy": curves["test_accuracy"][-1],
        "train_time_s": train_time_s,
        "epochs": len(curves["train_loss"]),
        "curves": curves,
    }


def summarize(results: list[dict]) -> dict:
    """The AI Scientist's format: means, standard errors (std / sqrt(n)) and per-seed values."""
    metrics = ("test_accuracy", "train_loss", "train_time_s")
    per_seed = {m: [float(r[m]) for r in results] for m in metrics}
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
    seeds = seeds_of(seed_offset, N_SEEDS)
    budget = Budget(budget_s, train_share=TRAIN_SHARE, trainings=len(seeds))
    print(f"seeds {seeds} (offset {seed_offset} from {SEED_VAR})")
    print(budget.describe())

    data = make_data()
    results = []
    for seed in seeds:
        results.append(train(seed, data, budget.next_deadline()))

    trained = [r["epochs"] for r in results]
    final_info = {
        DATASET: {
            **summarize(results),
            "seeds": seeds,
            "budget": budget.record(trained, EPOCHS, "epochs"),
        }
    }
    all_results = {
        DATASET: {
            "epochs": list(range(1, max(trained) + 1)),
            "seeds": seeds,
            "train_loss": padded([r["curves"]["train_loss"] for r in results]),
            "test_accuracy": padded([r["curves"]["test_accuracy"] for r in results]),
        }
    }
    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
        json.dump(final_info, f, indent=2)
    with open(os.path.join(args.out_dir, "all_results.json"), "w") as f:
        json.dump(all_results, f)
    means = final_info[DATASET]["means"]
    print("final " + " ".join(f"{k} {v:.4f}" for k, v in means.items()))


if __name__ == "__main__":
    main()
