"""Readers of the official file formats (MNIST IDX, CIFAR-10, ListOps TSV) and the tokenizers."""
