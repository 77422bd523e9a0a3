#include "engine/slurm.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace hcasim {

namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

struct command_result {
    int status = -1;  // exit code, 127 when the program was not found
    std::string out, err;
};

// Runs a Slurm client command (PATH search) and captures its stdout and stderr.
command_result run_command(const std::vector<std::string>& args) {
    command_result r;
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) != 0) return r;
    if (pipe(err_pipe) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        return r;
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        close(out_pipe[0]);
        close(err_pipe[0]);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        r.err = std::string("fork: ") + std::strerror(errno);
        return r;
    }
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&r.out, &r.err};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string trimmed(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t start = 0;
    while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
    return s.substr(start);
}

// Appends the row.json of every point still without a row; returns how many it found.
size_t gather_rows(const sweep_spec& spec, const std::string& out_dir, sweep_results& results) {
    size_t found = 0;
    for (size_t k = 0; k < results.total(); ++k) {
        if (results.has(k)) continue;
        sweep_row row;
        const std::string row_file = point_dir(out_dir, k) + "/row.json";
        // A row written for other metrics is read again from the point's stats.json.
        if (read_row_file(spec, row_file, row, out_dir) && row.point == k) {
            results.append(row);
            if (row.exit_status != 0)
                std::cerr << "sweep: point " << k << " exited " << row.exit_status
                          << (row.stderr_tail.empty() ? "" : ": ")
                          << row.stderr_tail.substr(row.stderr_tail.rfind('\n') + 1) << "\n";
            ++found;
        }
    }
    return found;
}

std::vector<size_t> missing_points(const sweep_results& results) {
    std::vector<size_t> missing;
    for (size_t k = 0; k < results.total(); ++k)
        if (!results.has(k)) missing.push_back(k);
    return missing;
}

int summary(const sweep_spec& spec, const sweep_results& results, const std::string& out_dir,
            const std::string& log_hint) {
    const auto missing = missing_points(results);
    const size_t total = results.total(), failed = results.failed();
    std::cerr << "sweep: " << results.count() << "/" << total << " points done";
    if (failed) std::cerr << ", " << failed << " failed";
    std::cerr << "; results in " << out_dir << "/results.csv\n";
    if (!results.written()) {
        std::cerr << "hcasim sweep: cannot write " << out_dir
                  << "/results.csv and results.jsonl: rows are missing from them\n";
        return 3;
    }
    if (!missing.empty())
        std::cerr << "sweep: no row yet for point" << (missing.size() > 1 ? "s " : " ")
                  << slurm_array_ranges(missing) << log_hint << "; `--resume` submits them again\n";
    return missing.empty() && failed == 0 ? 0 : 1;
}

// The cluster's MaxArraySize (task ids run 0 .. MaxArraySize - 1); Slurm's default 1001 when
// scontrol does not say.
uint64_t cluster_max_array_size() {
    const command_result r = run_command({"scontrol", "show", "config"});
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("MaxArraySize", 0) != 0) continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos) break;
        const std::string v = trimmed(line.substr(eq + 1));
        if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() < 10)
            return std::max<uint64_t>(2, std::stoull(v));
        break;
    }
    return 1001;
}

// Whether the job still has tasks in the queue; false with `problem` when squeue fails.
bool job_in_queue(const std::string& job_id, bool& in_queue, std::string& problem) {
    const command_result r = run_command({"squeue", "-h", "-j", job_id, "-o", "%i %T"});
    if (r.status == 0) {
        in_queue = !trimmed(r.out).empty();
        return true;
    }
    // Once a finished job is purged from slurmctld's memory squeue calls its id invalid.
    if (r.err.find("Invalid job id") != std::string::npos) {
        in_queue = false;
        return true;
    }
    problem = "squeue: " + trimmed(r.err.empty() ? r.out : r.err);
    return false;
}

}  // namespace

std::string slurm_array_ranges(const std::vector<size_t>& indices) {
    std::string s;
    for (size_t i = 0; i < indices.size();) {
        size_t j = i;
        while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
        s += (s.empty() ? "" : ",") + std::to_string(indices[i]);
        if (j > i) s += "-" + std::to_string(indices[j]);
        i = j + 1;
    }
    return s;
}

std::string slurm_job_script(const sweep_spec& spec, const sweep_options& opts,
                             const std::string& sweep_file, const std::string& out_dir,
                             const std::string& binary) {
    std::string s = "#!/bin/sh\n";
    s += "#SBATCH --job-name=hcasim-" + fs::path(sweep_file).stem().string() + "\n";
    s += "#SBATCH --output=" + out_dir + "/slurm/job%A_%a.log\n";
    s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
    if (!opts.partition.empty()) s += "#SBATCH --partition=" + opts.partition + "\n";
    if (!opts.time_limit.empty()) s += "#SBATCH --time=" + opts.time_limit + "\n";
    if (!opts.mem.empty()) s += "#SBATCH --mem=" + opts.mem + "\n";
    if (!opts.account.empty()) s += "#SBATCH --account=" + opts.account + "\n";
    if (!opts.qos.empty()) s += "#SBATCH --qos=" + opts.qos + "\n";
    for (const auto& a : opts.sbatch_args) s += "#SBATCH " + a + "\n";
    s += "# One sweep point per array task: point = task id + HCASIM_POINT_OFFSET (a sweep larger\n"
         "# than the cluster's MaxArraySize is submitted as several arrays, each with its\n"
         "# offset); it writes " +
         out_dir +
         "/points/<point>/row.json.\n"
         "# Submitted by `hcasim sweep --backend slurm` with --array=<tasks>%<jobs>.\n";
    s += "exec " + shell_quote(binary) + " sweep " + shell_quote(sweep_file) +
         " --point \"$((SLURM_ARRAY_TASK_ID + ${HCASIM_POINT_OFFSET:-0}))\" -o " +
         shell_quote(out_dir);
    for (const auto& set : spec.sets) s += " --set " + shell_quote(set);
    return s + "\n";
}

int run_sweep_slurm(const sweep_spec& spec, const sweep_options& opts) {
    const std::string out_dir = fs::absolute(opts.out_dir).lexically_normal().string();
    const std::string sweep_file = fs::absolute(spec.file).lexically_normal().string();
    sweep_results results(spec, out_dir);
    std::string problem;
    if (!results.open(opts.resume, problem)) {
        std::cerr << "hcasim sweep: " << problem << "\n";
        return 3;
    }
    if (opts.resume) gather_rows(spec, out_dir, results);
    std::vector<size_t> todo = missing_points(results);
    if (todo.empty()) {
        results.finish();
        return summary(spec, results, out_dir, "");
    }
    std::error_code ec;
    fs::create_directories(out_dir + "/slurm", ec);
    for (size_t k : todo) fs::remove(point_dir(out_dir, k) + "/row.json", ec);
    const std::string script_path = out_dir + "/slurm/sweep.sbatch";
    {
        std::ofstream script(script_path);
        script << slurm_job_script(spec, opts, sweep_file, out_dir, self_binary());
        if (!script.flush()) {
            std::cerr << "hcasim sweep: cannot write " << script_path << "\n";
            return 3;
        }
    }
    // Task ids must stay below the cluster's MaxArraySize: the points go out as arrays of at
    // most that many, each with its offset; with -j, each array waits for the one before
    // (afterany), so no more than -j tasks run at once.
    const uint64_t max_array = opts.max_array_size ? opts.max_array_size : cluster_max_array_size();
    std::vector<std::string> job_ids;
    for (size_t first = 0; first < todo.size();) {
        const uint64_t offset = todo[first] / max_array * max_array;
        std::vector<size_t> tasks;
        size_t last = first;
        for (; last < todo.size() && todo[last] < offset + max_array; ++last)
            tasks.push_back(todo[last] - offset);
        std::string array = slurm_array_ranges(tasks);
        if (opts.jobs) array += "%" + std::to_string(opts.jobs);
        std::vector<std::string> cmd = {
            "sbatch", "--parsable", "--array=" + array,
            "--export=ALL,HCASIM_POINT_OFFSET=" + std::to_string(offset)};
        if (opts.jobs && !job_ids.empty()) cmd.push_back("--dependency=afterany:" + job_ids.back());
        cmd.push_back(script_path);
        const command_result sub = run_command(cmd);
        const std::string job_id = trimmed(sub.out.substr(0, sub.out.find(';')));
        if (sub.status != 0 || job_id.empty()) {
            std::cerr << "hcasim sweep: sbatch failed (exit " << sub.status
                      << "): " << trimmed(sub.err) << "\n";
            for (const auto& id : job_ids) run_command({"scancel", id});
            return 3;
        }
        job_ids.push_back(job_id);
        std::cerr << "sweep: submitted job array " << job_id << " (" << tasks.size() << " point"
                  << (tasks.size() == 1 ? "" : "s") << ", --array=" << array
                  << (offset ? ", points = task + " + std::to_string(offset) : std::string())
                  << ")\n";
        first = last;
    }
    {
        std::ofstream ids(out_dir + "/slurm/job_id");
        for (const auto& id : job_ids) ids << id << "\n";
    }
    if (opts.no_wait) {
        std::cerr << "sweep: gather the rows with: hcasim sweep " << spec.file << " --collect -o "
                  << opts.out_dir << "\n";
        return 0;
    }
    const std::string log_hint =
        " (see " + out_dir + "/slurm/job<array>_<task>.log, task = point - the array's offset)";
    sweep_signals signals;
    int squeue_failures = 0;
    bool interrupted = false;
    while (true) {
        gather_rows(spec, out_dir, results);
        bool in_queue = false;
        bool asked = true;
        for (const auto& id : job_ids) {
            bool queued = true;
            if (!job_in_queue(id, queued, problem)) {
                asked = false;
                break;
            }
            in_queue = in_queue || queued;
        }
        if (!asked) {
            if (++squeue_failures >= 5) {
                std::cerr << "hcasim sweep: " << problem << "; the job may still run: gather with "
                          << "--collect\n";
                results.finish();
                return 3;
            }
        } else {
            squeue_failures = 0;
        }
        if (!in_queue) break;
        const auto until = clock_type::now() + std::chrono::milliseconds(opts.poll_ms);
        int sig = 0;
        while (clock_type::now() < until && sig != SIGINT && sig != SIGTERM)
            sig = signals.wait(std::max<long>(
                1, static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         until - clock_type::now())
                                         .count())));
        if (sig == SIGINT || sig == SIGTERM) {
            std::cerr << "sweep: interrupted, cancelling job" << (job_ids.size() > 1 ? "s" : "");
            for (const auto& id : job_ids) {
                std::cerr << " " << id;
                run_command({"scancel", id});
            }
            std::cerr << "\n";
            interrupted = true;
            break;
        }
    }
    gather_rows(spec, out_dir, results);
    results.finish();
    const int code = summary(spec, results, out_dir, log_hint);
    return interrupted ? 130 : code;
}

int collect_sweep(const sweep_spec& spec, const sweep_options& opts) {
    sweep_results results(spec, opts.out_dir);
    std::string problem;
    if (!results.open(true, problem)) {
        std::cerr << "hcasim sweep: " << problem << "\n";
        return 3;
    }
    gather_rows(spec, opts.out_dir, results);
    results.finish();
    return summary(spec, results, opts.out_dir, "");
}

}  // namespace hcasim
