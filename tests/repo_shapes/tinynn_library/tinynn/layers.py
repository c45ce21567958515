"""Layers with forward and backward passes."""

import numpy as np


class Dense:
    def __init__(self, inputs, outputs, rng):
        self.params = {"w": rng.normal(0.0, inputs**-0.5, (inputs, outputs)), "b": np.zeros(outputs)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["w"] + self.params["b"]

    def backward(self, grad):
        self.grads = {"w": self.x.T @ grad, "b": grad.sum(axis=0)}
        return grad @ self.params["w"].T


class ReLU:
    params: dict = {}
    grads: dict = {}

    def forward(self, x):
        self.mask = x > 0
        return x * self.mask

    def backward(self, grad):
        return grad * self.mask


class Sequential:
    def __init__(self, *layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, grad):
        for layer in reversed(self.layers):
            grad = layer.backward(grad)

    def parameters(self):
        return [(layer.params, layer.grads) for layer in self.layers if layer.params]


def softmax_cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    loss = float(-np.log(probs[np.arange(len(labels)), labels] + 1e-9).mean())
    probs[np.arange(len(labels)), labels] -= 1.0
    return loss, probs / len(labels)
