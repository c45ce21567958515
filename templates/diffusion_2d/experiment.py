"""A denoising diffusion probabilistic model (DDPM) on 2-D synthetic point clouds, in PyTorch.

Run as ``python experiment.py --out_dir=run_0``. For every data set in DATASETS and every seed it
trains a small MLP to predict the noise added to a point at a random diffusion step, then draws
new points by ancestral sampling from pure Gaussian noise. It writes:

- ``<out_dir>/final_info.json``: {dataset: {"means": {...}, "stderrs": {...},
  "final_info_dict": {metric: [one value per seed]}}}  (The AI Scientist's result format)
- ``<out_dir>/all_results.json``: training-loss curves of every seed, plus the real and the
  generated points of seed 0 (plot.py draws them)

Set the environment variable LABTUI_SMOKE=1 for a tiny run (a few seconds on a CPU) that checks
the code path; without it the run is the real experiment, sized for a GPU (minutes).

labtui may set two more (README, "Run budget and seeds"; labtui_run.py reads them):
LABTUI_RUN_BUDGET_S, the seconds the whole run may take (training stops early, at TRAIN_SHARE of
it, so that the results are written in time), and LABTUI_SEED, an offset that gives the run
other training seeds on the same data. Without them the run is the one described above.
"""

from __future__ import annotations

import argparse
import json
import math
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
# Data (generated in code; each data set is standardised to zero mean and unit variance)
DATASETS = ["moons", "circles", "line", "spiral"]
N_TRAIN = 10000  # training points per data set
N_EVAL = 2000  # held-out real points: evaluation loss and sample-quality reference
DATA_NOISE = 0.05  # std of the Gaussian noise added to the clean shapes (before standardising)
DATA_SEED = 0  # the data are the same for every training seed, so runs are comparable

# Diffusion process
NUM_TIMESTEPS = 100  # T: number of noising steps
BETA_SCHEDULE = "linear"  # "linear" (Ho et al. 2020) or "cosine" (Nichol & Dhariwal 2021)
BETA_START = 1e-4  # linear schedule: first and last variance
BETA_END = 0.02

# Denoiser: MLP on [sinusoidal embedding of x, sinusoidal embedding of t]
EMBEDDING_DIM = 64  # per input coordinate and for the time step
INPUT_EMBEDDING_SCALE = 25.0  # x is multiplied by this before its sinusoidal embedding
HIDDEN_DIM = 128
HIDDEN_LAYERS = 3  # residual blocks (Linear + GELU) between the input and output layers

# Training
TRAIN_STEPS = 10000
BATCH_SIZE = 256
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.0  # AdamW's decoupled weight decay
LR_SCHEDULE = "cosine"  # "cosine" (decay to 0 over TRAIN_STEPS) or "constant"
GRAD_CLIP = 1.0  # max gradient norm; 0 disables clipping
EMA_DECAY = 0.995  # exponential moving average of the weights, used for sampling; 0 disables

# Evaluation
N_GENERATED = 2000  # points sampled from the trained model per data set and seed
KDE_BANDWIDTH = 0.1  # Gaussian kernel width (standardised units) for the KL estimate

# Seeds and logging
N_SEEDS = 3  # seeds 0..N_SEEDS-1; LABTUI_SEED=k gives seeds k*N_SEEDS..(k+1)*N_SEEDS-1 instead
LOG_EVERY = 1000  # print a progress line every LOG_EVERY steps
CURVE_EVERY = 50  # record the mean training loss of every CURVE_EVERY steps for plot.py

# Run budget (LABTUI_RUN_BUDGET_S): TRAIN_STEPS stays the cap, the budget may stop training earlier
TRAIN_SHARE = 0.85  # training stops at this fraction of the budget; the rest evaluates and writes

# LABTUI_SMOKE=1: a tiny run that only checks the code path (a few seconds on a CPU).
SMOKE = os.environ.get("LABTUI_SMOKE") == "1"
if SMOKE:
    DATASETS = ["moons", "circles"]
    N_TRAIN, N_EVAL, N_GENERATED = 1000, 400, 400
    NUM_TIMESTEPS = 50
    HIDDEN_DIM = 64
    TRAIN_STEPS, BATCH_SIZE = 200, 128
    N_SEEDS = 1
    LOG_EVERY, CURVE_EVERY = 50, 10

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
CPU_THREADS = 1  # torch threads on a CPU: the models are tiny, extra threads mostly contend


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------
def make_shape(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n clean points of a 2-D shape plus DATA_NOISE Gaussian noise, shape (n, 2)."""
    if name == "moons":
        upper = rng.random(n) < 0.5
        t = rng.uniform(0.0, np.pi, n)
        x = np.where(upper, np.cos(t), 1.0 - np.cos(t))
        y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
        points = np.stack([x, y], axis=1)
    elif name == "circles":
        outer = rng.random(n) < 0.5
        t = rng.uniform(0.0, 2.0 * np.pi, n)
        radius = np.where(outer, 1.0, 0.5)
        points = np.stack([radius * np.cos(t), radius * np.sin(t)], axis=1)
    elif name == "line":
        x = rng.uniform(-1.0, 1.0, n)
        points = np.stack([x, 0.5 * x], axis=1)
    elif name == "spiral":
        t = np.sqrt(rng.uniform(0.0, 1.0, n)) * 3.0 * np.pi  # uniform density along the arm
        points = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3.0 * np.pi)
    else:
        raise ValueError(f"unknown data set {name!r}: use moons, circles, line or spiral")
    return points + rng.normal(0.0, DATA_NOISE, size=points.shape)


def make_data(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([DATA_SEED, sum(map(ord, name))])
    train = make_shape(name, N_TRAIN, rng)
    evaluation = make_shape(name, N_EVAL, rng)
    mean, std = train.mean(axis=0), train.std(axis=0) + 1e-8
    return {
        "train": ((train - mean) / std).astype(np.float32),
        "eval": ((evaluation - mean) / std).astype(np.float32),
    }


# ---------------------------------------------------------------------------------------------
# Diffusion schedule
# ---------------------------------------------------------------------------------------------
class NoiseSchedule:
    """The forward process q(x_t | x_0) = N(sqrt(abar_t) x_0, (1 - abar_t) I) and its reverse."""

    def __init__(self, num_timesteps: int, schedule: str) -> None:
        if schedule == "linear":
            betas = torch.linspace(BETA_START, BETA_END, num_timesteps, dtype=torch.float64)
        elif schedule == "cosine":
            s = 0.008
            steps = torch.arange(num_timesteps + 1, dtype=torch.float64) / num_timesteps
            abar = torch.cos((steps + s) / (1 + s) * math.pi / 2) ** 2
            betas = (1 - abar[1:] / abar[:-1]).clamp(max=0.999)
        else:
            raise ValueError(f"unknown BETA_SCHEDULE {schedule!r}: use 'linear' or 'cosine'")
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = torch.cat([torch.ones(1, dtype=torch.float64), alphas_cumprod[:-1]])
        self.num_timesteps = num_timesteps
        tensors = {
            "betas": betas,
            "sqrt_alphas_cumprod": alphas_cumprod.sqrt(),
            "sqrt_one_minus_alphas_cumprod": (1.0 - alphas_cumprod).sqrt(),
            "recip_sqrt_alphas": alphas.rsqrt(),
            # posterior q(x_{t-1} | x_t, x_0) variance (Ho et al. 2020, eq. 7)
            "posterior_variance": betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod),
        }
        for key, value in tensors.items():
            setattr(self, key, value.float().to(DEVICE))

    def add_noise(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return (
            self.sqrt_alphas_cumprod[t, None] * x0
            + self.sqrt_one_minus_alphas_cumprod[t, None] * noise
        )

    def step(
        self, eps: torch.Tensor, t: int, x_t: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        """One ancestral sampling step x_t -> x_{t-1} given the predicted noise."""
        coef = self.betas[t] / self.sqrt_one_minus_alphas_cumprod[t]
        mean = self.recip_sqrt_alphas[t] * (x_t - coef * eps)
        if t == 0:
            return mean
        z = torch.randn(x_t.shape, generator=generator, device=DEVICE)
        return mean + self.posterior_variance[t].sqrt() * z


# ---------------------------------------------------------------------------------------------
# Denoiser
# ---------------------------------------------------------------------------------------------
class SinusoidalEmbedding(nn.Module):
    def __init__(self, dim: int, scale: float = 1.0) -> None:
        super().__init__()
        half = dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / max(half - 1, 1))
        self.register_buffer("freqs", freqs)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angles = (x * self.scale)[..., None] * self.freqs
        return torch.cat([angles.sin(), angles.cos()], dim=-1)


class ResidualBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.linear(x))


class Denoiser(nn.Module):
    """Predicts the noise eps in x_t from (x_t, t)."""

    def __init__(self) -> None:
        super().__init__()
        self.x_embedding = SinusoidalEmbedding(EMBEDDING_DIM, INPUT_EMBEDDING_SCALE)
        self.t_embedding = SinusoidalEmbedding(EMBEDDING_DIM)
        self.net = nn.Sequential(
            nn.Linear(3 * EMBEDDING_DIM, HIDDEN_DIM),
            nn.GELU(),
            *[ResidualBlock(HIDDEN_DIM) for _ in range(HIDDEN_LAYERS)],
            nn.Linear(HIDDEN_DIM, 2),
        )

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        x_emb = self.x_embedding(x).flatten(start_dim=1)  # (batch, 2 * EMBEDDING_DIM)
        t_emb = self.t_embedding(t.float())
        return self.net(torch.cat([x_emb, t_emb], dim=1))


class EMA:
    """Exponential moving average of a model's parameters."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for k, v in model.state_dict().items():
            self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1.0 - self.decay)


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------
@torch.no_grad()
def eval_loss(model: nn.Module, schedule: NoiseSchedule, x0: torch.Tensor) -> float:
    """Noise-prediction MSE on held-out points, with fixed noise and time steps."""
    generator = torch.Generator(device=DEVICE).manual_seed(12345)
    t = torch.randint(0, schedule.num_timesteps, (len(x0),), generator=generator, device=DEVICE)
    noise = torch.randn(x0.shape, generator=generator, device=DEVICE)
    pred = model(schedule.add_noise(x0, noise, t), t)
    return float(nn.functional.mse_loss(pred, noise))


@torch.no_grad()
def sample(model: nn.Module, schedule: NoiseSchedule, n: int, seed: int) -> torch.Tensor:
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn((n, 2), generator=generator, device=DEVICE)
    for t in reversed(range(schedule.num_timesteps)):
        t_batch = torch.full((n,), t, dtype=torch.long, device=DEVICE)
        x = schedule.step(model(x, t_batch), t, x, generator)
    return x


def energy_distance(x: np.ndarray, y: np.ndarray) -> float:
    """2 E|X-Y| - E|X-X'| - E|Y-Y'|: zero iff the two distributions are equal (lower is better)."""
    xt, yt = torch.from_numpy(x).double(), torch.from_numpy(y).double()
    xy = torch.cdist(xt, yt).mean()
    xx = torch.cdist(xt, xt).mean()
    yy = torch.cdist(yt, yt).mean()
    return float(2 * xy - xx - yy)


def kde_log_density(points: np.ndarray, centres: np.ndarray, bandwidth: float) -> np.ndarray:
    """Log density at `points` of a Gaussian kernel density estimate built on `centres`."""
    sq = torch.cdist(torch.from_numpy(points).double(), torch.from_numpy(centres).double()) ** 2
    log_kernel = -sq / (2 * bandwidth**2) - math.log(2 * math.pi * bandwidth**2)
    return (torch.logsumexp(log_kernel, dim=1) - math.log(len(centres))).numpy()


def kl_divergence(real: np.ndarray, generated: np.ndarray) -> float:
    """KL(real || generated), estimated with Gaussian KDEs evaluated at the real points."""
    log_p = kde_log_density(real, real, KDE_BANDWIDTH)
    log_q = kde_log_density(real, generated, KDE_BANDWIDTH)
    return float(np.mean(log_p - log_q))


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------
def train(
    dataset: str, seed: int, data: dict[str, np.ndarray], deadline: float | None = None
) -> dict:
    """Train one denoiser for TRAIN_STEPS steps, or fewer when the run budget's deadline passes
    (at least one); return its final metrics, loss curve and generated points."""
    torch.manual_seed(seed)
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    schedule = NoiseSchedule(NUM_TIMESTEPS, BETA_SCHEDULE)
    model = Denoiser().to(DEVICE)
    ema = EMA(model, EMA_DECAY) if EMA_DECAY > 0 else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    if LR_SCHEDULE == "cosine":
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=TRAIN_STEPS)
    elif LR_SCHEDULE == "constant":
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    else:
        raise ValueError(f"unknown LR_SCHEDULE {LR_SCHEDULE!r}: use 'cosine' or 'constant'")

    x_train = torch.from_numpy(data["train"]).to(DEVICE)
    x_eval = torch.from_numpy(data["eval"]).to(DEVICE)
    curve_steps: list[int] = []
    curve_loss: list[float] = []
    window: list[torch.Tensor] = []
    start = time.perf_counter()
    model.train()
    for step in range(1, TRAIN_STEPS + 1):
        idx = torch.randint(0, len(x_train), (BATCH_SIZE,), generator=generator, device=DEVICE)
        x0 = x_train[idx]
        noise = torch.randn(x0.shape, generator=generator, device=DEVICE)
        t = torch.randint(0, NUM_TIMESTEPS, (BATCH_SIZE,), generator=generator, device=DEVICE)
        loss = nn.functional.mse_loss(model(schedule.add_noise(x0, noise, t), t), noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if GRAD_CLIP > 0:
            nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        scheduler.step()
        if ema is not None:
            ema.update(model)
        window.append(loss.detach())
        stop = step < TRAIN_STEPS and out_of_time(deadline)
        if step % CURVE_EVERY == 0 or step == TRAIN_STEPS or stop:
            curve_steps.append(step)
            curve_loss.append(float(torch.stack(window).mean()))
            window = []
        if step % LOG_EVERY == 0 or step == TRAIN_STEPS or stop:
            print(
                f"dataset {dataset} seed {seed} step {step}/{TRAIN_STEPS} "
                f"train_loss {curve_loss[-1]:.4f}",
                flush=True,
            )
        if stop:
            print(
                f"budget: stopped early after {step}/{TRAIN_STEPS} steps "
                f"(dataset {dataset} seed {seed})",
                flush=True,
            )
            break
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    train_time_s = time.perf_counter() - start

    if ema is not None:
        model.load_state_dict(ema.shadow)
    model.eval()
    val_loss = eval_loss(model, schedule, x_eval)
    start = time.perf_counter()
    generated = sample(model, schedule, N_GENERATED, seed=1000 + seed)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    inference_time_s = time.perf_counter() - start
    generated_np = generated.cpu().numpy().astype(np.float64)
    real = data["eval"].astype(np.float64)
    metrics = {
        "train_loss": curve_loss[-1],
        "eval_loss": val_loss,
        "energy_distance": energy_distance(generated_np, real),
        "kl_divergence": kl_divergence(real, generated_np),
        "train_time_s": train_time_s,
        "inference_time_s": inference_time_s,
    }
    print(
        f"dataset {dataset} seed {seed} done "
        + " ".join(f"{k} {v:.4f}" for k, v in metrics.items()),
        flush=True,
    )
    return {
        "metrics": metrics,
        "steps": curve_steps[-1],
        "curve_steps": curve_steps,
        "curve_loss": curve_loss,
        "generated": generated_np,
    }


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
    print(f"device {DEVICE.type} smoke {int(SMOKE)} datasets {','.join(DATASETS)}", flush=True)
    seeds = seeds_of(seed_offset, N_SEEDS)
    budget = Budget(budget_s, train_share=TRAIN_SHARE, trainings=len(DATASETS) * len(seeds))
    print(f"seeds {seeds} (offset {seed_offset} from {SEED_VAR})", flush=True)
    print(budget.describe(), flush=True)

    final_info: dict[str, dict] = {}
    all_results: dict[str, dict] = {}
    for dataset in DATASETS:
        data = make_data(dataset)
        results = [train(dataset, seed, data, budget.next_deadline()) for seed in seeds]
        final_info[dataset] = {
            **summarize(results),
            "seeds": seeds,
            "budget": budget.record([r["steps"] for r in results], TRAIN_STEPS, "steps"),
        }
        n_plot = min(1000, N_GENERATED, N_EVAL)
        steps, train_loss = aligned(
            [r["curve_steps"] for r in results], [r["curve_loss"] for r in results]
        )
        all_results[dataset] = {
            "seeds": seeds,
            "steps": steps,
            "train_loss": train_loss,
            "real": np.round(data["eval"][:n_plot], 4).tolist(),
            "generated": np.round(results[0]["generated"][:n_plot], 4).tolist(),
        }

    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
        json.dump(final_info, f, indent=2)
    with open(os.path.join(args.out_dir, "all_results.json"), "w") as f:
        json.dump(all_results, f)
    for dataset, entry in final_info.items():
        print(
            f"final {dataset} " + " ".join(f"{k} {v:.4f}" for k, v in entry["means"].items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
