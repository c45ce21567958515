"""Logistic regression on random Fourier features of two interleaved half-moons."""

import logging

import hydra
import numpy as np
from omegaconf import DictConfig

log = logging.getLogger(__name__)


def moons(n, noise, rng):
    angles = rng.uniform(0.0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(angles), 1.0 - np.cos(angles))
    y = np.where(upper, np.sin(angles), 0.5 - np.sin(angles))
    points = np.stack([x, y], axis=1) + rng.normal(0.0, noise, (n, 2))
    return points, upper.astype(float)


def features(points, projection, phase):
    return np.cos(points @ projection + phase)


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    rng = np.random.default_rng(cfg.seed)
    points, labels = moons(cfg.data.n_samples, cfg.data.noise, rng)
    projection = rng.normal(0.0, 2.0, (2, cfg.model.features))
    phase = rng.uniform(0.0, 2 * np.pi, cfg.model.features)
    inputs = features(points, projection, phase)
    n_val = int(cfg.data.val_fraction * len(inputs))
    train_x, train_y = inputs[n_val:], labels[n_val:]
    val_x, val_y = inputs[:n_val], labels[:n_val]
    weights = np.zeros(cfg.model.features)
    accuracy = 0.0
    for epoch in range(cfg.trainer.max_epochs):
        scores = 1.0 / (1.0 + np.exp(-(train_x @ weights)))
        gradient = train_x.T @ (scores - train_y) / len(train_y) + cfg.model.l2 * weights
        weights -= cfg.model.lr * gradient
        if (epoch + 1) % cfg.trainer.eval_every == 0:
            accuracy = float((((val_x @ weights) > 0) == (val_y > 0.5)).mean())
            log.info("Validation accuracy: %.4f", accuracy)
    return accuracy


if __name__ == "__main__":
    main()
