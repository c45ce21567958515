"""Classify Gaussian blobs with a two-layer MLP and Adam."""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _data import blobs  # noqa: E402

from tinynn import Adam, Dense, ReLU, Sequential, softmax_cross_entropy  # noqa: E402


def accuracy(model, x, y):
    return float((model.forward(x).argmax(axis=1) == y).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    x, y = blobs(4000, args.classes, rng, spread=1.5)
    train_x, train_y, val_x, val_y = x[:3000], y[:3000], x[3000:], y[3000:]
    model = Sequential(Dense(2, args.hidden, rng), ReLU(), Dense(args.hidden, args.classes, rng))
    optimiser = Adam(model, lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(train_x))
        for start in range(0, len(order), 100):
            batch = order[start : start + 100]
            loss, grad = softmax_cross_entropy(model.forward(train_x[batch]), train_y[batch])
            model.backward(grad)
            optimiser.step()
        if epoch % 10 == 0:
            train_acc, val_acc = accuracy(model, train_x, train_y), accuracy(model, val_x, val_y)
            print(f"epoch {epoch:4d} | loss {loss:.4f} | train acc {train_acc:.3f} | val acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
