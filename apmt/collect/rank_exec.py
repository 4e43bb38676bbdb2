"""One rank's start, without a shell: find the rank, record the process id, set the variables,
fill ``{rank}`` in the measuring tool's words, and exec the command.

The launcher starts this file once per rank (``apmt.collect.launch.rank_command``)::

    python -I -S rank_exec.py [--pid-dir DIR] [--env NAME=VALUE]... [--stdin FILE]
                              [--prefix N] -- WORD...

- the rank is the first set of OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, PMIX_RANK
  (else 0), exported as APMT_RANK;
- ``--pid-dir``: the process id goes to ``DIR/rank.<rank>.pid``; it stays the command's,
  since the command replaces this process (exec), so the rank's samples and signals are
  found by it;
- ``--env``: variables set here, on the node that runs the rank (launchers do not forward
  the whole environment to other nodes; Open MPI forwards only ``-x`` names);
- ``--prefix N``: the first N words are the backend's (``perf record ... --``); ``{rank}``
  in them is the rank, so each rank writes its own files. The application's words are run
  as they are: no ``{rank}``, no shell syntax, nothing expanded;
- ``--stdin``: the file the command reads as its standard input (the template's ``< FILE``).

It imports only what Python has loaded at start (os, sys, _signal), and runs by its path
with ``-S`` (no site: no site-packages, no editable-install finder) and ``-I`` (no PYTHON*
variables, and neither the working directory nor this folder on sys.path, so a file in the
run folder cannot stand in for a module): 13-16 ms a rank measured here (a shell: 2 ms),
where ``python -m`` of the installed package took 30 ms, and importing ``signal`` or ``json``
would add 10 ms. Errors are one line on the rank's stderr, with the exit status a shell
would give: 127 for a program not found, 126 for one that cannot run, 2 for a bad call.
"""

import _signal  # the C module behind signal, loaded at start; signal would import enum
import os
import sys

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "PMIX_RANK")
RANK_WORD = "{rank}"
PID_FILE = "rank.{rank}.pid"
OPTIONS = ("--pid-dir", "--env", "--stdin", "--prefix")
# Python ignores these at start; an ignored signal stays ignored across exec
PYTHON_IGNORED = ("SIGPIPE", "SIGXFSZ")


class Failure(Exception):
    """Why the rank cannot start, and the exit status that says so."""

    def __init__(self, text: str, status: int) -> None:
        super().__init__(text)
        self.status = status


def rank_of() -> str:
    """The rank the launcher gave this process: the first of its variables that is set."""
    for name in RANK_VARIABLES:
        if os.environ.get(name, ""):
            return os.environ[name]
    return "0"


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The options' values (--env may repeat; of the others the last counts) and the words
    after ``--``."""
    options: dict[str, list[str]] = {name: [] for name in OPTIONS}
    index = 0
    while index < len(argv) and argv[index] != "--":
        name = argv[index]
        if name not in options or index + 1 >= len(argv):
            raise Failure(f"{name!r} is not an option with a value ({', '.join(OPTIONS)})", 2)
        options[name].append(argv[index + 1])
        index += 2
    words = argv[index + 1:]
    if not words:
        raise Failure("no command after '--'", 2)
    return options, words


def command_words(words: list[str], count: str, rank: str) -> list[str]:
    """The words with ``{rank}`` filled in the backend's first ``count`` words only."""
    if not count.isdigit() or int(count) > len(words):
        raise Failure(f"--prefix {count!r} is not a count of at most {len(words)} words", 2)
    head = [word.replace(RANK_WORD, rank) for word in words[:int(count)]]
    return head + words[int(count):]


def set_variables(items: list[str], rank: str) -> None:
    """APMT_RANK and the run's variables, in this process's environment, which exec hands
    on to the command."""
    os.environ["APMT_RANK"] = rank
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise Failure(f"--env {item!r} is not NAME=VALUE", 2)
        os.environ[name] = value


def write_pid(folder: str, rank: str) -> None:
    """This process id, which the command keeps (exec), into ``rank.<rank>.pid``."""
    path = os.path.join(folder, PID_FILE.format(rank=rank))
    try:
        with open(path, "w") as stream:
            stream.write(f"{os.getpid()}\n")
    except OSError as error:
        raise Failure(f"{path}: cannot write ({error.strerror})", 1) from None


def read_stdin_from(path: str) -> None:
    """The template's ``< FILE``: the file becomes standard input (fd 0, inherited)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError as error:
        raise Failure(f"{path}: cannot open as standard input ({error.strerror})", 1) \
            from None
    os.dup2(descriptor, 0)
    os.close(descriptor)


def run(words: list[str]) -> None:
    """Become the command (it keeps this process id); Failure if it cannot start."""
    for name in PYTHON_IGNORED:
        _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
    try:
        os.execvp(words[0], words)
    except OSError as error:
        status = 127 if isinstance(error, FileNotFoundError) else 126
        raise Failure(f"{words[0]}: cannot run ({error.strerror})", status) from None


def main(argv: list[str]) -> int:
    """Start the rank; the exit status when it cannot start (else exec never returns)."""
    rank = rank_of()
    try:
        options, words = parse(argv)
        words = command_words(words, (options["--prefix"] or ["0"])[-1], rank)
        set_variables(options["--env"], rank)
        if options["--pid-dir"]:
            write_pid(options["--pid-dir"][-1], rank)
        if options["--stdin"]:
            read_stdin_from(options["--stdin"][-1])
        run(words)
    except Failure as failure:
        sys.stderr.write(f"apmt rank {rank}: {failure}\n")
        return failure.status
    return 0    # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
