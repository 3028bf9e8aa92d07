"""runplan: plan a large-language-model pre-training run before renting a GPU."""

__version__ = "0.1.0"
