"""A character-level bigram language model of input.txt, trained with SGD.

Logs the train and test loss to TensorBoard every --eval-interval steps.
"""

import argparse
import time

import numpy as np
from torch.utils.tensorboard import SummaryWriter


def softmax(logits):
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def nll(weights, xs, ys):
    probs = softmax(weights[xs])
    return float(-np.log(probs[np.arange(len(ys)), ys] + 1e-9).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", default="input.txt", help="the text to model")
    parser.add_argument("--max-steps", type=int, default=-1, help="optimisation steps (-1: forever)")
    parser.add_argument("--eval-interval", type=int, default=500, help="steps between evaluations")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--log-dir", default="runs/bigram", help="TensorBoard log directory")
    args = parser.parse_args()

    with open(args.input, encoding="utf-8") as handle:
        text = handle.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = np.array([index[c] for c in text])
    split = int(0.9 * len(data))
    train, test = data[:split], data[split:]
    rng = np.random.default_rng(args.seed)
    weights = rng.normal(0.0, 0.01, (len(chars), len(chars)))
    writer = SummaryWriter(log_dir=args.log_dir)

    step = 0
    started = time.time()
    while args.max_steps < 0 or step < args.max_steps:
        at = rng.integers(0, len(train) - 1, args.batch_size)
        xs, ys = train[at], train[at + 1]
        probs = softmax(weights[xs])
        loss = float(-np.log(probs[np.arange(len(ys)), ys] + 1e-9).mean())
        probs[np.arange(len(ys)), ys] -= 1.0
        np.add.at(weights, xs, -args.lr * probs / len(ys))
        time.sleep(0.002)  # a bigger model's step
        step += 1
        if step % args.eval_interval == 0:
            test_loss = nll(weights, test[:-1], test[1:])
            writer.add_scalar("Loss/train", loss, step)
            writer.add_scalar("Loss/test", test_loss, step)
            elapsed = time.time() - started
            print(f"step {step} train loss: {loss:.4f} test loss: {test_loss:.4f} ({elapsed:.1f}s)")
    writer.close()


if __name__ == "__main__":
    main()
