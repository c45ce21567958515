"""Optimisers over a model's (params, grads) pairs."""

import numpy as np


class SGD:
    def __init__(self, model, lr=0.1):
        self.model, self.lr = model, lr

    def step(self):
        for params, grads in self.model.parameters():
            for name in params:
                params[name] -= self.lr * grads[name]


class Adam:
    def __init__(self, model, lr=1e-3, betas=(0.9, 0.999)):
        self.model, self.lr, self.betas, self.t = model, lr, betas, 0
        self.state = {}

    def step(self):
        self.t += 1
        b1, b2 = self.betas
        for params, grads in self.model.parameters():
            for name in params:
                key = (id(params), name)
                m, v = self.state.get(key, (np.zeros_like(params[name]), np.zeros_like(params[name])))
                m = b1 * m + (1 - b1) * grads[name]
                v = b2 * v + (1 - b2) * grads[name] ** 2
                self.state[key] = (m, v)
                params[name] -= self.lr * (m / (1 - b1**self.t)) / (np.sqrt(v / (1 - b2**self.t)) + 1e-8)
