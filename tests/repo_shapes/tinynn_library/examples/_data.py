"""Toy data sets the examples share."""

import numpy as np


def blobs(n, classes, rng, spread=1.0):
    centres = rng.normal(0.0, 4.0, (classes, 2))
    labels = rng.integers(0, classes, n)
    return centres[labels] + rng.normal(0.0, spread, (n, 2)), labels
