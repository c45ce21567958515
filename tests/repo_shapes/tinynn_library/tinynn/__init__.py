"""tinynn: dense layers and optimisers in numpy, small enough to read in one sitting."""

from .layers import Dense, ReLU, Sequential, softmax_cross_entropy
from .optim import SGD, Adam

__all__ = ["SGD", "Adam", "Dense", "ReLU", "Sequential", "softmax_cross_entropy"]
