// The Slurm backend of `hcasim sweep`: all points not yet done go to one job array
// (`sbatch --parsable --array=<indices>%J OUTDIR/slurm/sweep.sbatch`), each array task runs
// `hcasim sweep SWEEP.json --point $SLURM_ARRAY_TASK_ID -o OUTDIR`, which writes
// OUTDIR/points/<k>/row.json. The submitting process polls `squeue` until the job has left the
// queue, appending rows to results.csv/jsonl as their row.json files appear; `--no-wait` returns
// after submitting and `--collect` gathers later. Output folders must be on a file system the
// compute nodes share; every path in the job script is absolute.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/sweep_runner.h"

namespace hcasim {

// "0-3,5,7-9" for {0,1,2,3,5,7,8,9}; `indices` sorted.
std::string slurm_array_ranges(const std::vector<size_t>& indices);

// The batch script for a sweep whose file, output folder and binary are the given absolute paths.
std::string slurm_job_script(const sweep_spec& spec, const sweep_options& opts,
                             const std::string& sweep_file, const std::string& out_dir,
                             const std::string& binary);

// Same exit codes as run_sweep_local; with --no-wait 0 once submitted.
int run_sweep_slurm(const sweep_spec& spec, const sweep_options& opts);
// `--collect`: gathers the row.json files into results.csv/jsonl. 0 when every point has a row
// and every row exited 0, 1 otherwise.
int collect_sweep(const sweep_spec& spec, const sweep_options& opts);

}  // namespace hcasim
