"""One module per task: each turns original or generated files into a dataset (``load_<task>``)."""
