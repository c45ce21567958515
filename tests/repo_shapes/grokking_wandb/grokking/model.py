"""A one-hidden-layer MLP with a softmax output, trained with AdamW."""

import numpy as np


class MLP:
    def __init__(self, inputs, hidden, outputs, seed):
        rng = np.random.default_rng(seed)
        self.params = {
            "w1": rng.normal(0.0, inputs**-0.5, (inputs, hidden)),
            "w2": rng.normal(0.0, hidden**-0.5, (hidden, outputs)),
        }
        self.moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in self.params.items()}
        self.steps = 0

    def forward(self, x):
        hidden = np.maximum(x @ self.params["w1"], 0.0)
        logits = hidden @ self.params["w2"]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        return hidden, probs / probs.sum(axis=1, keepdims=True)

    def loss_and_accuracy(self, x, y):
        _, probs = self.forward(x)
        loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-9).mean())
        return loss, float((probs.argmax(axis=1) == y).mean())

    def step(self, x, y, lr, weight_decay):
        hidden, probs = self.forward(x)
        probs[np.arange(len(y)), y] -= 1.0
        grads = {"w2": hidden.T @ probs / len(y)}
        back = (probs @ self.params["w2"].T) * (hidden > 0)
        grads["w1"] = x.T @ back / len(y)
        self.steps += 1
        for name, grad in grads.items():
            first, second = self.moments[name]
            first[:] = 0.9 * first + 0.1 * grad
            second[:] = 0.98 * second + 0.02 * grad**2
            update = (first / (1 - 0.9**self.steps)) / (np.sqrt(second / (1 - 0.98**self.steps)) + 1e-8)
            self.params[name] -= lr * (update + weight_decay * self.params[name])
