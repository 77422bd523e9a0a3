// Running a sweep (SPEC §6): the points of a sweep_spec in a fixed order, each one a separate
// `hcasim run BASE --set ... -o OUTDIR/points/<n>` process, and the rows they give.
//
// Outputs in OUTDIR:
//   results.jsonl   one JSON object per finished point, appended (and flushed) as it finishes:
//                   {"point", "axes": {path: value}, "metrics": {path: value}, "exit_status",
//                    "wall_s", "stderr_tail"}
//   results.csv     the same rows as columns: point, each axis, each metric, exit_status;
//                   appended as points finish, rewritten sorted by point when the sweep ends
//                   (or stops), so a resumed sweep gives the same file as an uninterrupted one.
//                   Wall-clock time is only in results.jsonl.
//   points/<n>/     the run's outputs (stats.json, stdout.txt, stderr.txt) and row.json, the
//                   point's row, which `--collect` and the Slurm backend gather.
#pragma once

#include <signal.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/sweep_spec.h"

namespace hcasim {

// Point n: one value per axis, in the spec's axis order. The cartesian product enumerates the
// last axis fastest; zip takes the i-th value of every axis.
struct sweep_point {
    size_t index = 0;
    std::vector<json> values;
};

// The number of points, and point n of them (n below that number), computed without listing them.
size_t sweep_point_count(const sweep_spec& spec);
sweep_point sweep_point_at(const sweep_spec& spec, size_t n);
std::vector<sweep_point> sweep_points(const sweep_spec& spec);

struct sweep_row {
    size_t point = 0;
    std::vector<json> values;   // per axis
    std::vector<json> metrics;  // per metric; null when the run gave no such stat
    int exit_status = 0;        // the run's exit code; 128 + signal when it was killed
    double wall_s = 0;
    std::string stderr_tail;  // the last lines of the run's stderr when it did not exit 0
    // Ctrl-C or SIGTERM stopped the run (its stats.json says "interrupted"): the point has no
    // row, so --resume (or the Slurm gather) runs it again.
    bool interrupted = false;
};

nlohmann::ordered_json row_to_json(const sweep_spec& spec, const sweep_row& row);
// False when `j` is not a row of this spec (other axes, metrics, or values of another point).
// `with_metrics` false: the point, axes and status only (a row written for other metrics).
bool row_from_json(const sweep_spec& spec, const json& j, sweep_row& row, bool with_metrics = true);

std::string csv_header(const sweep_spec& spec);
std::string csv_line(const sweep_row& row);

struct sweep_options {
    std::string out_dir;
    unsigned jobs = 0;  // 0: all cores
    bool resume = false;
    bool progress = false;  // a progress line on stderr
    // Slurm backend
    std::string partition, time_limit, mem, account, qos;
    std::vector<std::string> sbatch_args;  // --sbatch-arg: more #SBATCH lines, verbatim
    uint64_t max_array_size = 0;           // 0: the cluster's MaxArraySize (scontrol show config)
    bool no_wait = false;
    unsigned poll_ms = 2000;
};

// The command line that runs one point (argv[0] is this binary).
std::vector<std::string> point_command(const sweep_spec& spec, const sweep_point& p,
                                       const std::string& out_dir);

// Runs point `p` in the foreground and returns its row (also written to points/<n>/row.json).
sweep_row run_point(const sweep_spec& spec, const sweep_point& p, const std::string& out_dir);

// The rows of a sweep's output folder, keyed by point.
class sweep_results {
  public:
    sweep_results(const sweep_spec& spec, std::string out_dir);
    // Starts the files: with `resume`, keeps the rows of results.jsonl that belong to this
    // sweep's points (rewriting both files with only those), else starts them empty.
    bool open(bool resume, std::string& problem);
    bool has(size_t point) const { return m_rows.count(point) != 0; }
    size_t total() const { return m_total; }
    size_t count() const { return m_rows.size(); }
    size_t failed() const;
    // Appends a row to both files and flushes them.
    void append(const sweep_row& row);
    // Rewrites both files sorted by point.
    void finish();
    // False once a write to either file failed (a full disk): the files may miss rows.
    bool written() const { return !m_write_failed; }

  private:
    void rewrite();
    const sweep_spec& m_spec;
    std::string m_dir;
    size_t m_total;
    std::map<size_t, sweep_row> m_rows;  // the finished points only
    int m_csv = -1, m_jsonl = -1;
    bool m_write_failed = false;
};

// Blocks SIGINT, SIGTERM and SIGCHLD while it lives; they are taken with wait(), so a sweep has
// no asynchronous signal handler. Children must unblock them (spawned points do).
class sweep_signals {
  public:
    sweep_signals();
    ~sweep_signals();
    sweep_signals(const sweep_signals&) = delete;
    sweep_signals& operator=(const sweep_signals&) = delete;
    // The signal taken within `ms`, 0 on timeout.
    int wait(long ms);

  private:
    sigset_t m_set, m_old_mask;
    struct sigaction m_old_chld {};
};

// Reads a points/<n>/row.json; false when missing or not a row of this spec. A row written for
// other metrics is read again from the point's stats.json under the sweep's `out_dir`
// (reextract_row).
bool read_row_file(const sweep_spec& spec, const std::string& path, sweep_row& row,
                   const std::string& out_dir);
// A row `j` of this sweep's point with other metrics (the sweep file's `metrics` changed): the
// same point and axis values, the metrics read again from the point's stats.json under
// `out_dir`, and its row.json rewritten. False when `j` is no such row or the stats.json is gone
// (the point then runs again).
bool reextract_row(const sweep_spec& spec, const json& j, const std::string& out_dir,
                   sweep_row& row);

// This binary's path (/proc/self/exe).
std::string self_binary();
// The default output folder of a sweep file: out/sweeps/<file stem>.
std::string default_sweep_out_dir(const std::string& sweep_file);
std::string point_dir(const std::string& out_dir, size_t point);

// Exit codes: 0 every point exited 0, 1 some point did not, 3 internal error, 130 interrupted
// (SIGINT/SIGTERM: running points are killed, finished rows stay).
int run_sweep_local(const sweep_spec& spec, const sweep_options& opts);
// `--point K`: runs point K and writes its row.json (one Slurm array task). Returns the point's
// exit status, 2 when K is out of range.
int run_sweep_point(const sweep_spec& spec, size_t k, const sweep_options& opts);

}  // namespace hcasim
