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
    s += "# One sweep point per array task; it writes " + out_dir +
         "/points/<task>/row.json.\n"
         "# Submitted by `hcasim sweep --backend slurm` with --array=<points>%<jobs>.\n";
    s += "exec " + shell_quote(binary) + " sweep " + shell_quote(sweep_file) +
         " --point \"$SLURM_ARRAY_TASK_ID\" -o " + shell_quote(out_dir);
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
    std::string array = slurm_array_ranges(todo);
    if (opts.jobs) array += "%" + std::to_string(opts.jobs);
    const command_result sub =
        run_command({"sbatch", "--parsable", "--array=" + array, script_path});
    const std::string job_id = trimmed(sub.out.substr(0, sub.out.find(';')));
    if (sub.status != 0 || job_id.empty()) {
        std::cerr << "hcasim sweep: sbatch failed (exit " << sub.status << "): " << trimmed(sub.err)
                  << "\n";
        return 3;
    }
    std::ofstream(out_dir + "/slurm/job_id") << job_id << "\n";
    std::cerr << "sweep: submitted job array " << job_id << " (" << todo.size() << " point"
              << (todo.size() == 1 ? "" : "s") << ", --array=" << array << ")\n";
    if (opts.no_wait) {
        std::cerr << "sweep: gather the rows with: hcasim sweep " << spec.file << " --collect -o "
                  << opts.out_dir << "\n";
        return 0;
    }
    const std::string log_hint = " (see " + out_dir + "/slurm/job" + job_id + "_<point>.log)";
    sweep_signals signals;
    int squeue_failures = 0;
    bool interrupted = false;
    while (true) {
        gather_rows(spec, out_dir, results);
        bool in_queue = true;
        if (!job_in_queue(job_id, in_queue, problem)) {
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
            std::cerr << "sweep: interrupted, cancelling job " << job_id << "\n";
            run_command({"scancel", job_id});
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
