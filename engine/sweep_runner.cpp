#include "engine/sweep_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "engine/json_file.h"
#include "engine/set_override.h"

namespace hcasim {

namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr size_t k_tail_lines = 10;
constexpr size_t k_tail_bytes = 4096;

// A JSON document the sweep wrote itself (a row, a point's stats.json); null when it cannot be
// read within the input limits.
json read_json_or_null(const std::string& text) {
    json j;
    json_problem problem;
    return parse_json_bounded(text, j, problem) ? j : json();
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half.
bool write_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (out.fail()) {
        std::remove(tmp.c_str());
        return false;
    }
    return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool write_all(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

std::string tail_of(const std::string& path) {
    std::string text = read_text(path);
    if (text.size() > k_tail_bytes) text = text.substr(text.size() - k_tail_bytes);
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    std::string tail;
    for (size_t i = lines.size() > k_tail_lines ? lines.size() - k_tail_lines : 0; i < lines.size();
         ++i)
        tail += (tail.empty() ? "" : "\n") + lines[i];
    return tail;
}

std::string last_line(const std::string& text) {
    size_t nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
}

json metric_value(const json& stats, const std::string& metric) {
    try {
        const json::json_pointer ptr(dotted_to_pointer(metric));
        if (stats.contains(ptr)) return stats.at(ptr);
    } catch (const std::exception&) {
    }
    return nullptr;
}

std::string csv_field(const json& v) {
    std::string s;
    if (v.is_null())
        return "";
    else if (v.is_string())
        s = v.get<std::string>();
    else
        s = v.dump();
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string status_text(int status) {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    return "status " + std::to_string(status);
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 3;
}

std::string describe_point(const sweep_spec& spec, const sweep_point& p) {
    std::string s;
    for (size_t a = 0; a < spec.axes.size(); ++a)
        s += (a ? ", " : "") + spec.axes[a].first + "=" +
             (p.values[a].is_string() ? p.values[a].get<std::string>() : p.values[a].dump());
    return s;
}

std::string clock_text(double seconds) {
    const long s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

// Starts one point's `hcasim run` with stdout and stderr in its folder. With `own_group` the
// child leads its own process group, so a Ctrl-C at the terminal reaches only the sweep, which
// then stops its children itself.
pid_t spawn_point(const sweep_spec& spec, const sweep_point& p, const std::string& out_dir,
                  bool own_group, std::string& problem) {
    const std::string dir = point_dir(out_dir, p.index);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) {
        problem = "cannot create " + dir + ": " + ec.message();
        return -1;
    }
    const std::vector<std::string> args = point_command(spec, p, out_dir);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string out_path = dir + "/stdout.txt", err_path = dir + "/stderr.txt";
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        problem = std::string("fork: ") + std::strerror(errno);
        return -1;
    }
    if (pid == 0) {
        if (own_group) setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(128 + SIGTERM);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out >= 0) dup2(out, STDOUT_FILENO);
        if (err >= 0) dup2(err, STDERR_FILENO);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        execv(argv[0], argv.data());
        std::fprintf(stderr, "hcasim sweep: cannot run %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    if (own_group) setpgid(pid, pid);
    return pid;
}

// A point's stats.json (null when missing or not JSON).
json point_stats(const std::string& dir) {
    const std::string path = dir + "/stats.json";
    return fs::exists(path) ? read_json_or_null(read_text(path)) : json();
}

// The sweep's metrics read from a point's stats.json, in the sweep file's order.
std::vector<json> metrics_of(const sweep_spec& spec, const json& stats) {
    std::vector<json> out;
    for (const auto& m : spec.metrics) out.push_back(metric_value(stats, m));
    return out;
}

// The row of a point whose process ended with `status`; writes points/<n>/row.json unless the
// run was interrupted (the point then has no row and runs again on --resume).
sweep_row finish_point(const sweep_spec& spec, const sweep_point& p, const std::string& out_dir,
                       int status, double wall_s) {
    const std::string dir = point_dir(out_dir, p.index);
    sweep_row row;
    row.point = p.index;
    row.values = p.values;
    row.exit_status = exit_code_of(status);
    row.wall_s = wall_s;
    const json stats = point_stats(dir);
    const bool have_stats = stats.is_object();
    row.metrics = have_stats ? metrics_of(spec, stats) : std::vector<json>(spec.metrics.size());
    if (row.exit_status != 0) {
        row.stderr_tail = tail_of(dir + "/stderr.txt");
        if (!WIFEXITED(status))
            row.stderr_tail += (row.stderr_tail.empty() ? "" : "\n") + status_text(status);
    }
    row.interrupted = row.exit_status != 0 && have_stats && stats.value("interrupted", false);
    if (row.interrupted) {
        std::error_code ec;
        fs::remove(dir + "/row.json", ec);
        return row;
    }
    write_atomically(dir + "/row.json", row_to_json(spec, row).dump() + "\n");
    return row;
}

class progress_line {
  public:
    progress_line(bool on, size_t total, size_t done)
        : m_on(on), m_total(total), m_done_before(done), m_start(clock_type::now()) {}
    void show(size_t done, size_t failed, size_t running) {
        if (!m_on) return;
        const double elapsed = std::chrono::duration<double>(clock_type::now() - m_start).count();
        const size_t this_run = done - m_done_before;
        std::string eta = "?";
        if (this_run > 0)
            eta = clock_text(elapsed / static_cast<double>(this_run) *
                             static_cast<double>(m_total - done));
        std::cerr << "\rsweep: " << done << "/" << m_total << " done";
        if (failed) std::cerr << " (" << failed << " failed)";
        std::cerr << ", " << running << " running, elapsed " << clock_text(elapsed) << ", ETA "
                  << (done == m_total ? "0:00" : eta) << "\x1b[K" << std::flush;
        m_shown = true;
    }
    void clear() {
        if (m_shown) std::cerr << "\r\x1b[K" << std::flush;
        m_shown = false;
    }
    void end() {
        if (m_shown) std::cerr << "\n";
        m_shown = false;
    }

  private:
    bool m_on;
    size_t m_total, m_done_before;
    clock_type::time_point m_start;
    bool m_shown = false;
};

}  // namespace

sweep_signals::sweep_signals() {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &m_old_chld);
    sigemptyset(&m_set);
    sigaddset(&m_set, SIGINT);
    sigaddset(&m_set, SIGTERM);
    sigaddset(&m_set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &m_set, &m_old_mask);
}

sweep_signals::~sweep_signals() {
    sigprocmask(SIG_SETMASK, &m_old_mask, nullptr);
    sigaction(SIGCHLD, &m_old_chld, nullptr);
}

int sweep_signals::wait(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    int sig = sigtimedwait(&m_set, nullptr, &ts);
    return sig < 0 ? 0 : sig;
}

size_t sweep_point_count(const sweep_spec& spec) {
    if (spec.axes.empty()) return 0;
    if (spec.zip) return spec.axes.front().second.size();
    size_t total = 1;  // the loader bounds it by k_max_sweep_points
    for (const auto& axis : spec.axes) total *= axis.second.size();
    return total;
}

sweep_point sweep_point_at(const sweep_spec& spec, size_t n) {
    sweep_point p;
    p.index = n;
    p.values.resize(spec.axes.size());
    size_t rest = n;
    for (size_t a = spec.axes.size(); a-- > 0;) {
        const auto& values = spec.axes[a].second;
        if (spec.zip) {
            p.values[a] = values.at(n);
        } else {
            p.values[a] = values[rest % values.size()];
            rest /= values.size();
        }
    }
    return p;
}

std::vector<sweep_point> sweep_points(const sweep_spec& spec) {
    std::vector<sweep_point> points;
    for (size_t i = 0, n = sweep_point_count(spec); i < n; ++i)
        points.push_back(sweep_point_at(spec, i));
    return points;
}

json row_to_json(const sweep_spec& spec, const sweep_row& row) {
    json j;
    j["point"] = row.point;
    json axes = json::object();
    for (size_t a = 0; a < spec.axes.size(); ++a) axes[spec.axes[a].first] = row.values.at(a);
    j["axes"] = axes;
    json metrics = json::object();
    for (size_t m = 0; m < spec.metrics.size(); ++m) metrics[spec.metrics[m]] = row.metrics.at(m);
    j["metrics"] = metrics;
    j["exit_status"] = row.exit_status;
    j["wall_s"] = row.wall_s;
    if (!row.stderr_tail.empty()) j["stderr_tail"] = row.stderr_tail;
    return j;
}

bool row_from_json(const sweep_spec& spec, const json& j, sweep_row& row, bool with_metrics) {
    if (!j.is_object() || !j.contains("point") || !j["point"].is_number_unsigned()) return false;
    const size_t index = j["point"].get<size_t>();
    if (index >= sweep_point_count(spec)) return false;
    const sweep_point point = sweep_point_at(spec, index);
    const json& axes = j.value("axes", json());
    const json& metrics = j.value("metrics", json());
    if (!axes.is_object() || axes.size() != spec.axes.size()) return false;
    if (with_metrics && (!metrics.is_object() || metrics.size() != spec.metrics.size()))
        return false;
    if (!j.contains("exit_status") || !j["exit_status"].is_number_integer()) return false;
    sweep_row r;
    r.point = index;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
        auto it = axes.find(spec.axes[a].first);
        if (it == axes.end() || *it != point.values[a]) return false;
        r.values.push_back(*it);
    }
    for (const auto& m : with_metrics ? spec.metrics : std::vector<std::string>()) {
        auto it = metrics.find(m);
        if (it == metrics.end()) return false;
        r.metrics.push_back(*it);
    }
    r.exit_status = j["exit_status"].get<int>();
    if (j.contains("wall_s") && j["wall_s"].is_number()) r.wall_s = j["wall_s"].get<double>();
    if (j.contains("stderr_tail") && j["stderr_tail"].is_string())
        r.stderr_tail = j["stderr_tail"].get<std::string>();
    row = std::move(r);
    return true;
}

std::string csv_header(const sweep_spec& spec) {
    std::string h = "point";
    for (const auto& axis : spec.axes) h += "," + csv_field(axis.first);
    for (const auto& m : spec.metrics) h += "," + csv_field(m);
    return h + ",exit_status\n";
}

std::string csv_line(const sweep_row& row) {
    std::string l = std::to_string(row.point);
    for (const auto& v : row.values) l += "," + csv_field(v);
    for (const auto& v : row.metrics) l += "," + csv_field(v);
    return l + "," + std::to_string(row.exit_status) + "\n";
}

std::vector<std::string> point_command(const sweep_spec& spec, const sweep_point& p,
                                       const std::string& out_dir) {
    std::vector<std::string> args = {self_binary(), "run", spec.base,
                                     "--quiet",     "-o",  point_dir(out_dir, p.index)};
    for (const auto& s : spec.sets) args.insert(args.end(), {"--set", s});
    for (size_t a = 0; a < spec.axes.size(); ++a)
        args.insert(args.end(), {"--set", spec.axes[a].first + "=" + p.values[a].dump()});
    return args;
}

sweep_row run_point(const sweep_spec& spec, const sweep_point& p, const std::string& out_dir) {
    const auto start = clock_type::now();
    std::string problem;
    pid_t pid = spawn_point(spec, p, out_dir, false, problem);
    int status = 0;
    if (pid < 0) {
        std::cerr << "hcasim sweep: " << problem << "\n";
        status = 127 << 8;
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return finish_point(spec, p, out_dir, status,
                        std::chrono::duration<double>(clock_type::now() - start).count());
}

bool read_row_file(const sweep_spec& spec, const std::string& path, sweep_row& row,
                   const std::string& out_dir) {
    if (!fs::exists(path)) return false;
    const json j = read_json_or_null(read_text(path));
    return row_from_json(spec, j, row) || reextract_row(spec, j, out_dir, row);
}

bool reextract_row(const sweep_spec& spec, const json& j, const std::string& out_dir,
                   sweep_row& row) {
    if (!j.is_object() || !j.contains("metrics")) return false;
    sweep_row r;
    if (!row_from_json(spec, j, r, false)) return false;  // another point, axes or shape
    const std::string dir = point_dir(out_dir, r.point);
    const json stats = point_stats(dir);
    if (!stats.is_object() || stats.value("interrupted", false)) return false;
    r.metrics = metrics_of(spec, stats);
    write_atomically(dir + "/row.json", row_to_json(spec, r).dump() + "\n");
    row = std::move(r);
    return true;
}

std::string self_binary() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "hcasim";
    return std::string(buf, static_cast<size_t>(n));
}

std::string default_sweep_out_dir(const std::string& sweep_file) {
    return "out/sweeps/" + fs::path(sweep_file).stem().string();
}

std::string point_dir(const std::string& out_dir, size_t point) {
    return out_dir + "/points/" + std::to_string(point);
}

sweep_results::sweep_results(const sweep_spec& spec, std::string out_dir)
    : m_spec(spec), m_dir(std::move(out_dir)), m_total(sweep_point_count(spec)) {}

bool sweep_results::open(bool resume, std::string& problem) {
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec) {
        problem = "cannot create " + m_dir + ": " + ec.message();
        return false;
    }
    if (resume) {
        std::ifstream in(m_dir + "/results.jsonl");
        size_t dropped = 0, reextracted = 0;
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            sweep_row row;
            const json j = read_json_or_null(line);
            if (!row_from_json(m_spec, j, row)) {
                if (!reextract_row(m_spec, j, m_dir, row)) {
                    ++dropped;
                    continue;
                }
                ++reextracted;
            }
            m_rows[row.point] = std::move(row);
        }
        if (reextracted)
            std::cerr << "sweep: --resume: the metrics changed; " << reextracted << " row"
                      << (reextracted > 1 ? "s" : "")
                      << " read again from their points' stats.json, not rerun\n";
        if (dropped)
            std::cerr << "sweep: --resume: dropped " << dropped << " line"
                      << (dropped > 1 ? "s" : "") << " of " << m_dir
                      << "/results.jsonl that are not rows of this sweep\n";
    }
    rewrite();
    if (m_csv < 0 || m_jsonl < 0) {
        problem = "cannot write " + m_dir + "/results.csv and results.jsonl";
        return false;
    }
    return true;
}

size_t sweep_results::failed() const {
    return static_cast<size_t>(std::count_if(
        m_rows.begin(), m_rows.end(), [](const auto& r) { return r.second.exit_status != 0; }));
}

void sweep_results::append(const sweep_row& row) {
    m_rows[row.point] = row;
    if (!write_all(m_jsonl, row_to_json(m_spec, row).dump() + "\n") ||
        !write_all(m_csv, csv_line(row)))
        m_write_failed = true;
}

void sweep_results::finish() {
    rewrite();
}

void sweep_results::rewrite() {
    std::string csv = csv_header(m_spec), jsonl;
    for (const auto& [point, row] : m_rows) {
        csv += csv_line(row);
        jsonl += row_to_json(m_spec, row).dump() + "\n";
    }
    if (m_csv >= 0) ::close(m_csv);
    if (m_jsonl >= 0) ::close(m_jsonl);
    m_csv = m_jsonl = -1;
    const std::string csv_path = m_dir + "/results.csv", jsonl_path = m_dir + "/results.jsonl";
    if (!write_atomically(csv_path, csv) || !write_atomically(jsonl_path, jsonl)) {
        m_write_failed = true;
        return;
    }
    m_csv = ::open(csv_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    m_jsonl = ::open(jsonl_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
}

int run_sweep_local(const sweep_spec& spec, const sweep_options& opts) {
    sweep_results results(spec, opts.out_dir);
    std::string problem;
    if (!results.open(opts.resume, problem)) {
        std::cerr << "hcasim sweep: " << problem << "\n";
        return 3;
    }
    const size_t total = results.total();
    if (opts.resume && results.count() > 0)
        std::cerr << "sweep: --resume: " << results.count() << " of " << total
                  << " points already done\n";
    const unsigned jobs = std::max(1u, opts.jobs ? opts.jobs : std::thread::hardware_concurrency());

    struct running_point {
        sweep_point point;
        clock_type::time_point start;
    };
    std::map<pid_t, running_point> running;
    sweep_signals signals;
    progress_line progress(opts.progress, total, results.count());
    size_t next = 0;
    bool stop = false, internal_error = false;
    size_t interrupted = 0;  // points whose run was interrupted: no row, run again on --resume
    auto record = [&](pid_t pid, int status) {
        auto it = running.find(pid);
        if (it == running.end()) return;
        const running_point rp = it->second;
        running.erase(it);
        // A point stopped by the sweep's own interruption has no row: --resume runs it again.
        if (stop && WIFSIGNALED(status)) return;
        const sweep_row row =
            finish_point(spec, rp.point, opts.out_dir, status,
                         std::chrono::duration<double>(clock_type::now() - rp.start).count());
        if (row.interrupted) {
            ++interrupted;
            if (!stop) {
                progress.clear();
                std::cerr << "sweep: point " << rp.point.index << " ("
                          << describe_point(spec, rp.point) << ") interrupted ("
                          << status_text(status)
                          << "): no row; its partial stats.json is kept, --resume runs it again\n";
            }
            return;
        }
        results.append(row);
        if (row.exit_status != 0) {
            progress.clear();
            std::cerr << "sweep: point " << rp.point.index << " (" << describe_point(spec, rp.point)
                      << ") " << status_text(status) << ": " << last_line(row.stderr_tail) << "\n";
        }
    };
    auto reap = [&] {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) record(pid, status);
    };
    while (true) {
        while (!stop && running.size() < jobs && next < total) {
            const size_t index = next++;
            if (results.has(index)) continue;
            sweep_point point = sweep_point_at(spec, index);
            pid_t pid = spawn_point(spec, point, opts.out_dir, true, problem);
            if (pid < 0) {
                std::cerr << "hcasim sweep: " << problem << "\n";
                internal_error = stop = true;
                break;
            }
            running[pid] = {std::move(point), clock_type::now()};
        }
        progress.show(results.count(), results.failed(), running.size());
        if (running.empty()) break;
        const int sig = signals.wait(1000);
        if ((sig == SIGINT || sig == SIGTERM) && !stop) {
            stop = true;
            progress.clear();
            std::cerr << "sweep: " << (sig == SIGINT ? "interrupted" : "terminated")
                      << ", stopping " << running.size() << " running point"
                      << (running.size() == 1 ? "" : "s") << "\n";
            for (const auto& [pid, rp] : running) kill(-pid, SIGTERM);
            const auto deadline = clock_type::now() + std::chrono::seconds(3);
            while (!running.empty() && clock_type::now() < deadline) {
                reap();
                if (!running.empty()) signals.wait(50);
            }
            for (const auto& [pid, rp] : running) kill(-pid, SIGKILL);
        }
        reap();
    }
    progress.end();
    results.finish();
    const size_t done = results.count(), failed = results.failed();
    std::cerr << "sweep: " << done << "/" << total << " points done";
    if (failed) std::cerr << ", " << failed << " failed";
    if (interrupted)
        std::cerr << ", " << interrupted << " interrupted (--resume runs "
                  << (interrupted == 1 ? "it" : "them") << " again)";
    std::cerr << "; results in " << opts.out_dir << "/results.csv\n";
    if (!results.written()) {
        std::cerr << "hcasim sweep: cannot write " << opts.out_dir
                  << "/results.csv and results.jsonl: rows are missing from them\n";
        return 3;
    }
    if (internal_error) return 3;
    if (stop) return 130;
    return failed ? 1 : 0;
}

int run_sweep_point(const sweep_spec& spec, size_t k, const sweep_options& opts) {
    const size_t total = sweep_point_count(spec);
    if (k >= total) {
        std::cerr << "hcasim sweep: --point " << k << ": the sweep has " << total << " points (0.."
                  << total - 1 << ")\n";
        return 2;
    }
    const sweep_point point = sweep_point_at(spec, k);
    const sweep_row row = run_point(spec, point, opts.out_dir);
    if (row.interrupted)
        std::cerr << "sweep: point " << k << " (" << describe_point(spec, point)
                  << ") interrupted: no row; the gather or --resume runs it again\n";
    else if (row.exit_status != 0)
        std::cerr << "sweep: point " << k << " (" << describe_point(spec, point) << ") exit "
                  << row.exit_status << ": " << last_line(row.stderr_tail) << "\n";
    return row.exit_status;
}

}  // namespace hcasim
