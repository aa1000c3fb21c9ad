"""ptfund-tutor: a terminal tutor for PyTorch fundamentals."""

__version__ = "0.1.0"
