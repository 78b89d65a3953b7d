/*
 * slurm.h — `sf-fleet slurm CONFIG [--out DIR]`: the sbatch scripts of a run.
 *
 *   From a fleet YAML (its `slurm:` section: partitions, account, QOS, time
 *   limits, worker count and size, GPUs per gpu-evald; docs/operator.md,
 *   "Running on Slurm") it writes, into DIR (default <run.output_dir>/slurm):
 *
 *     fleet.yaml          the config, as given; the coordinator job reads it
 *     coordinator.sbatch  `sf-fleet coordinator`, publishing its endpoint in
 *                         <output_dir>/coordinator.endpoint; at the end of
 *                         the run it cancels the jobs that are left
 *     evald.sbatch        net runs only: one gpu-evald per GPU of a
 *                         --gres=gpu:N job, each publishing its endpoint in
 *                         <output_dir>/evald-K.endpoint
 *     worker.sbatch       a job array, one `sf-fleet worker` per task, which
 *                         finds the coordinator (and its gpu-evald) through
 *                         those files
 *     submit.sh           sbatch of the three, chained: gpu-evald and the
 *                         workers start after the coordinator has (after:ID);
 *                         the ids go to DIR/jobs
 *
 *   Every script asks for --requeue and forwards signals to its program: a
 *   cancelled, preempted or requeued worker abandons its job (which is
 *   re-issued at once), the pre-time-limit SIGUSR1 (--signal=B:USR1@N)
 *   drains it. The scripts are plain files to read and edit; generating
 *   them again gives the same bytes for the same config and directories.
 *
 * Exit codes as every sf-fleet command: 0 written, 1 a file could not be
 * written, 2 bad arguments or configuration.
 */
#ifndef SF_FLEET_CLI_SLURM_H
#define SF_FLEET_CLI_SLURM_H

/* The command: argv[0] is "slurm". `self` is this program's path and
 * `evald` the gpu-evald that `sf-fleet run` would start (their directory
 * is the scripts' default slurm.bin_dir). */
int sf_fleet_slurm(int argc, char **argv, const char *self, const char *evald);

#endif
