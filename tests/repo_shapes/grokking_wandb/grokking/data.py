"""Modular addition: every pair (a, b) with its label (a + b) mod p, split into train and validation."""

import numpy as np


def modular_addition(prime, training_fraction, seed):
    pairs = np.array([(a, b) for a in range(prime) for b in range(prime)])
    labels = (pairs[:, 0] + pairs[:, 1]) % prime
    order = np.random.default_rng(seed).permutation(len(pairs))
    cut = int(training_fraction * len(pairs))
    train, val = order[:cut], order[cut:]
    return (pairs[train], labels[train]), (pairs[val], labels[val])


def one_hot(pairs, prime):
    encoded = np.zeros((len(pairs), 2 * prime))
    encoded[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    encoded[np.arange(len(pairs)), prime + pairs[:, 1]] = 1.0
    return encoded
