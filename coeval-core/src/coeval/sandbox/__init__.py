"""Running untrusted code (a student's answer) against tests, in a child process with
limits: :func:`coeval.sandbox.run.run_python`; docs/benchmarks.md ("The code sandbox") says
exactly what it does and does not protect against. The package imports nothing itself, so
``coeval run``'s option for it costs no start-up time."""
