"""The autoencoder example of tinynn (see the README)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tinynn import SGD, Dense, ReLU, Sequential, softmax_cross_entropy  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(int)
    model = Sequential(Dense(2, 16, rng), ReLU(), Dense(16, 2, rng))
    optimiser = SGD(model, lr=0.5)
    for _ in range(200):
        loss, grad = softmax_cross_entropy(model.forward(x), y)
        model.backward(grad)
        optimiser.step()
    print("autoencoder: final loss", round(loss, 4))


if __name__ == "__main__":
    main()
