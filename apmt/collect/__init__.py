"""Measurement: run an application at several P and collect counters and MPI traces.

The flow of ``apmt profile STUDY.yaml``:
- profile.py  the steps of ``apmt profile`` and ``apmt extract``: the study (apmt.study) with
              the command line's choices, its runs, its lower-frequency rerun, its tables;
- launch.py   turns a run into a command line for its launcher (mpirun, srun);
- rank_exec.py  each rank's start, without a shell: its pid file, its variables, ``{rank}``
              in the backend's words, then exec (run by path: it imports only os and sys);
- backends/   per-rank wrappers that measure counters (perf hardware events, perf cpu-clock
              sampling, cachegrind) and parse what they wrote;
- pmpi.py     the PMPI tracing library (C, built with mpicc) and its output's parser;
- runner.py   runs each run in its own folder under the raw results (never overwritten; a
              finished run is skipped on a rerun), with its log, wall time and exit status;
- extract.py  turns the run folders into the measurements and communication tables;
- frequency.py, cpufreq.py  refinement's rerun at a lower CPU frequency, and the control of
              the frequency (cpupower, sysfs, Slurm's --cpu-freq).

Files a run folder holds (``raw/<study>/p<P>[_<param><v>...]_r<rep>/``):
    run.json            what ran: command, P, parameters, repetition, host, CPU frequency,
                        versions, wall time, exit status, backend and events
    stdout.log, stderr.log
    rank.<rank>.pid     the process id of one rank (its start wrote it; the application
                        keeps it: perf's samples of one perf around the launcher are split by it)
    pmpi.<rank>.tsv     the MPI trace of one rank (see pmpi.py)
    <backend files>     e.g. perf.<rank>.data, cachegrind.<rank>.out
    done                written last: the run finished and its files are complete
"""
