#!/bin/sh
# Submit run act1-slurm to Slurm, written by `sf-fleet slurm` (docs/operator.md,
# "Running on Slurm"): the coordinator first, then gpu-evald and the workers, which
# start once it has started. Arguments go to every sbatch (--reservation=R).
# The job ids go to jobs; the coordinator's job cancels the others when
# the run ends.
set -eu
dir='/shared/spirefleet/act1-slurm/slurm'
mkdir -p "$dir/logs"
coordinator=$(sbatch --parsable "$@" "$dir/coordinator.sbatch")
coordinator=${coordinator%%;*}
echo "coordinator $coordinator" >"$dir/jobs.tmp"
after=--dependency=after:$coordinator
evald=$(sbatch --parsable "$after" --kill-on-invalid-dep=yes "$@" "$dir/evald.sbatch")
evald=${evald%%;*}
echo "evald $evald" >>"$dir/jobs.tmp"
workers=$(sbatch --parsable "$after" --kill-on-invalid-dep=yes "$@" "$dir/worker.sbatch")
workers=${workers%%;*}
echo "workers $workers" >>"$dir/jobs.tmp"
mv "$dir/jobs.tmp" "$dir/jobs"
cat "$dir/jobs"
