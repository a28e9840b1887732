"""Benchmarks of CoEval (run through nox: `nox -s bench`, `nox -s bench_gpu`)."""
