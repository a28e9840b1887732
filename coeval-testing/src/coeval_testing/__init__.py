"""Test support for CoEval: the fake provider server and the synthetic-run writer."""
