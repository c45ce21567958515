"""Squeeze 8-dimensional points through 2 units and back."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import numpy as np
from tinynn import Adam, Dense, ReLU, Sequential

rng = np.random.default_rng(3)
codes = rng.normal(size=(512, 2))
data = codes @ rng.normal(size=(2, 8))
coder = Sequential(Dense(8, 2, rng), ReLU(), Dense(2, 8, rng))
opt = Adam(coder, lr=0.01)
for epoch in range(200):
    residual = coder.forward(data) - data
    coder.backward(residual / len(data))
    opt.step()
print("reconstruction error", float((residual**2).mean()))
