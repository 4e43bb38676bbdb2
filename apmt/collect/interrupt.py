"""Interrupts stop the work: a profiling run does not outlive what started it.

``apmt profile`` starts each launch in a session of its own (the launcher's process group and
the ranks', which Open MPI puts in groups of their own) and ends the whole session when:
- it gets SIGINT, SIGTERM or SIGHUP (raised here as ``Interrupted`` in the main thread);
- the process that started it dies (its parent, and the process named by ``APMT_WATCH_PID``,
  which the workflow sets to Snakemake's own process: Snakemake runs a job under a shell that
  outlives a SIGKILL of Snakemake), noticed by a watchdog thread within ``POLL_S``;
- apmt itself is killed with SIGKILL: the launcher gets SIGTERM from the kernel
  (``PR_SET_PDEATHSIG``) and passes it on to its ranks.
The run that was interrupted is written down as such (no ``done``), so a rerun redoes it and
keeps the finished ones. A signal whose exception Python swallows (one that lands in a fork
handler while a launch starts is printed as "Exception ignored" and lost) is raised again by
``raise_if_interrupted``, right after each launch starts and before each run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

WATCH_VARIABLE = "APMT_WATCH_PID"
POLL_S = 0.5
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """A signal or the death of the caller stopped the work (a KeyboardInterrupt, so that
    what cleans up after Ctrl-C cleans up after it too)."""

    def __init__(self, signum: int, reason: str | None = None) -> None:
        self.signum = signum
        self.reason = reason or f"interrupted by {signal.Signals(signum).name}"
        super().__init__(self.reason)


def interrupt_reason(error: BaseException) -> str:
    return error.reason if isinstance(error, Interrupted) else "interrupted by SIGINT"


def exit_code(error: BaseException) -> int:
    """128 + the signal, as a shell reports a process a signal ended."""
    return 128 + (error.signum if isinstance(error, Interrupted) else signal.SIGINT)


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise Interrupted, and a watchdog turns the death of the
    caller into a SIGTERM; only in the main thread, where Python delivers signals. SIGINT
    counts even where the caller ignored it (a background job of a script: Snakemake and its
    jobs then inherit the ignoring); an ignored SIGHUP stays ignored (nohup). The earlier
    handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _raise) for signum in SIGNALS
                if signum != signal.SIGHUP or signal.getsignal(signum) is not signal.SIG_IGN}
    _RECEIVED.clear()
    stop = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(watched(), stop), daemon=True,
                                name="apmt-watchdog")
    watchdog.start()
    try:
        yield
    finally:
        stop.set()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise(signum: int, frame: object) -> None:
    stop = Interrupted(signum, _CAUSE.pop(0) if _CAUSE else None)
    _RECEIVED.append(stop)
    raise stop


def raise_if_interrupted() -> None:
    """Raise again a signal that arrived while the work went on: its exception was swallowed
    where Python ignores exceptions (at-fork handlers, finalizers)."""
    if _RECEIVED:
        raise _RECEIVED[0]


_CAUSE: list[str] = []   # why the watchdog sent SIGTERM, for the run's record
_RECEIVED: list[Interrupted] = []   # the signals received inside stopped_by_signals


def watched() -> dict[int, str]:
    """Processes besides the parent whose death ends the work: APMT_WATCH_PID if it names a
    living process other than ours (a stale or bad value is ignored)."""
    text = os.environ.get(WATCH_VARIABLE, "").strip()
    if text.isascii() and text.isdigit() and int(text) not in (0, 1, os.getpid()) \
            and alive(int(text)):
        return {int(text): f"the process {WATCH_VARIABLE}={text} (Snakemake)"}
    return {}


def _watch(pids: dict[int, str], stop: threading.Event) -> None:
    parent = os.getppid()
    started = {pid: start_time(pid) for pid in pids}
    while not stop.wait(POLL_S):
        gone = [name for pid, name in pids.items() if start_time(pid) != started[pid]]
        if os.getppid() != parent:
            gone.insert(0, "its parent process")
        if gone:
            _CAUSE.append(f"interrupted: {gone[0]} ended")
            os.kill(os.getpid(), signal.SIGTERM)
            return


def start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat): a reused pid differs."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    return start_time(pid) is not None


def die_with_parent() -> None:
    """For Popen's preexec_fn: the kernel sends the launcher SIGTERM when apmt dies, even
    by SIGKILL (Linux only; elsewhere nothing)."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "prctl") else None
    except OSError:
        return None


_LIBC = _libc()   # loaded here, not in the forked child
