"""Running untrusted code (a student's answer and its tests) in an operating-system sandbox:
:func:`coeval_benchmarks.sandbox.run.run_python`. Each program runs under bubblewrap in its
own user, PID, network, IPC, UTS and mount namespaces, sees a read-only interpreter and an
empty tmpfs, and is killed with its whole namespace at its time limit. docs/benchmarks.md
("The code sandbox") says what this does and does not protect against. Only the
``python_tests`` evaluator uses it; the package imports nothing itself."""
