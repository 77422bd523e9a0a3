#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "engine/app_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <sstream>

#include <systemc>

#include "apps/message_io.h"
#include "apps/protocol.h"
#include "engine/app_program.h"
#include "engine/report.h"
#include "engine/sim_threads.h"
#include "engine/trace_recorder.h"
#include "engine/world.h"
#include "sim/git_commit.h"
#include "sim/kernel.h"
#include "sim/output_file.h"
#include "sim/version.h"

namespace hcasim {

namespace {

using wall = std::chrono::steady_clock;

volatile std::sig_atomic_t g_serve_signal = 0;
extern "C" void on_serve_signal(int sig) {
    g_serve_signal = sig;
}

// The state letter of a program's thread in /proc (R running, S sleeping, D disk wait, ...); 0
// when the thread is gone.
char thread_state(int pid, int tid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return 0;
    const size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : 0;
}

// Nanoseconds a program's thread has run on a CPU (/proc/PID/task/TID/schedstat, first field);
// -1 when the kernel does not say (no schedstat, or the thread is gone).
int64_t thread_run_ns(int pid, int tid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) +
                     "/schedstat");
    int64_t run = -1;
    if (!(in >> run)) return -1;
    return run;
}

class app_server : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(app_server);
    app_server(sc_core::sc_module_name name, world& w, const scenario& s, const serve_options& o,
               trace_recorder* recorder)
        : sc_core::sc_module(name), m_world(w), m_spec(s), m_opts(o), m_recorder(recorder) {
        m_timing.poll_quantum = ps_time(o.poll_quantum_ps);
        m_cpu_gap = ps_time(o.cpu_gap_ps);
        SC_THREAD(spawner);
    }
    ~app_server() override {
        for (auto& c : m_conns)
            if (c->fd >= 0) close(c->fd);
    }

    // The wall-clock loop; returns when interrupted or (once) when the last program left.
    int run(int listen_fd);
    bool stats_written() const { return m_written; }
    json programs_json() const { return m_done; }

  private:
    enum class state { outside, queued, inside, closed };
    // A thread waiting by polling its memory: the watch on that memory (holds).
    struct spin_watch {
        bool armed = false, fired = false, gone = false;
        wall::time_point fired_at;
        int64_t fired_run_ns = -1;  // the thread's CPU time when the write landed (-1: unknown)
    };
    struct connection {
        int fd = -1;
        int os_pid = 0, tid = 0;
        app_program* program = nullptr;
        state st = state::outside;
        sc_core::sc_time clock = sc_core::SC_ZERO_TIME;  // earliest time of its next call
        wall::time_point left = wall::now();             // when its last call returned
        // The thread's CPU time (schedstat) at the first look in /proc after its last call; -2:
        // not looked yet, -1: the kernel does not say.
        int64_t run_base_ns = -2;
        std::shared_ptr<spin_watch> spin = std::make_shared<spin_watch>();
        sc_core::sc_event wake;
        app_call call;
        bool gone = false;  // its socket closed
    };

    void spawner();
    void serve(connection& c);
    void accept_one(int listen_fd);
    // Reads a call from a connection outside the simulation and hands it to its thread.
    void take_call(connection& c);
    void reply(connection& c, int err, const wire::writer& out);
    // The earliest simulated time a running program thread outside a call may call at; false
    // when a thread that looks asleep has a call waiting (read it first).
    bool horizon(sc_core::sc_time& h);
    bool holds(connection& c);
    void advance();
    void program_left(app_program& p);
    bool write_stats(bool interrupted);

    world& m_world;
    const scenario& m_spec;
    serve_options m_opts;
    trace_recorder* m_recorder;  // --record (nullptr: none)
    app_timing m_timing;
    sc_core::sc_time m_cpu_gap;
    std::list<std::unique_ptr<connection>> m_conns;
    std::map<uint32_t, std::unique_ptr<app_program>> m_programs;
    std::map<uint32_t, int> m_threads;  // live connections per program
    uint32_t m_next_program = 1;
    std::vector<connection*> m_to_spawn;
    sc_core::sc_event m_spawn;
    sc_core::sc_time m_limit = sc_core::sc_max_time();  // the current run's end
    json m_done = json::array();                        // programs that left
    bool m_any_attached = false, m_written = false;
};

void app_server::spawner() {
    for (;;) {
        wait_event(m_spawn);
        for (connection* c : m_to_spawn)
            spawn_thread(("app_thread_" + std::to_string(c->tid)).c_str(),
                         [this, c] { serve(*c); });
        m_to_spawn.clear();
    }
}

// A connection's simulated thread: its calls, one at a time, each at the simulated time the
// program made it.
void app_server::serve(connection& c) {
    for (;;) {
        while (c.st != state::queued && !c.gone) wait_event(c.wake);
        if (c.st != state::queued) break;
        c.st = state::inside;
        int err = 0;
        wire::writer out;
        c.call.abandoned = [&c] { return c.gone; };
        c.program->execute(c.call, err, out);
        reply(c, err, out);
        c.st = state::outside;
        c.clock = hcasim::now() + m_cpu_gap;
        c.left = wall::now();
        c.run_base_ns = -2;
        // The run must stop where this thread may call next: nothing may happen past it first.
        if (c.clock < m_limit) {
            m_limit = c.clock;
            calendar::get().set_limit(m_limit);
        }
        sync_thread();  // the pause is at the thread's time
        sc_core::sc_pause();
        if (c.gone) break;
    }
    c.st = state::closed;
    if (--m_threads[c.program->id()] == 0) program_left(*c.program);
    sync_thread();
    sc_core::sc_pause();
}

void app_server::reply(connection& c, int err, const wire::writer& out) {
    wire::reply_header h;
    h.err = err;
    std::string reason;
    if (err) {
        // The driver's reason for the refusal goes back as the reply's text.
        host& hst = m_world.at(c.program->node()).host();
        reason = hst.last_reason();
        hst.clear_reason();
    }
    const void* payload = err ? static_cast<const void*>(reason.data()) : out.buffer().data();
    h.length = static_cast<uint32_t>(err ? reason.size() : out.buffer().size());
    if (c.gone || wire::send_message(c.fd, h, payload, h.length)) c.gone = true;
}

void app_server::program_left(app_program& p) {
    p.cleanup();
    m_done.push_back(p.to_json());
    if (!m_opts.quiet)
        std::cerr << "hcasim serve: " << p.name() << " (pid " << p.os_pid() << ") detached from "
                  << p.node() << " at simulated " << static_cast<double>(p.detached_ps()) / 1e6
                  << " us\n";
    m_programs.erase(p.id());
}

void app_server::accept_one(int listen_fd) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    auto c = std::make_unique<connection>();
    c->fd = fd;
    // The first call is attach; a program sends it as it connects.
    wire::request_header h;
    wire::attach_req a;
    std::vector<uint8_t> payload;
    pollfd p{fd, POLLIN, 0};
    wire::reply_header bad;
    if (poll(&p, 1, 2000) != 1 || wire::recv_message(fd, h, payload) ||
        h.op != static_cast<uint32_t>(wire::op::attach) || payload.size() != sizeof a) {
        close(fd);
        return;
    }
    std::memcpy(&a, payload.data(), sizeof a);
    std::string reason;
    const std::string node = wire::text(a.node);
    app_program* program = nullptr;
    if (a.version != wire::protocol_version) {
        bad.err = EPROTO;
        reason = "hcasim serve speaks protocol " + std::to_string(wire::protocol_version) +
                 ", the library " + std::to_string(a.version) + " (use the library of this build)";
    } else if (a.join) {
        auto it = m_programs.find(a.join);
        if (it == m_programs.end() || it->second->os_pid() != a.pid) {
            bad.err = ENOENT;
            reason = "no attached program " + std::to_string(a.join) + " of pid " +
                     std::to_string(a.pid);
        } else {
            program = it->second.get();
        }
    } else if (!m_world.has(node)) {
        bad.err = ENODEV;
        std::string names;
        for (const auto& n : m_world.node_names()) names += (names.empty() ? "" : ", ") + n;
        reason = "no node \"" + node + "\" in scenario " + m_spec.name + " (nodes: " + names + ")";
    } else {
        const uint32_t id = m_next_program++;
        auto made = std::make_unique<app_program>(id, m_world, node, wire::text(a.program), a.pid,
                                                  m_timing);
        program = made.get();
        m_programs[id] = std::move(made);
        m_any_attached = true;
        if (!m_opts.quiet)
            std::cerr << "hcasim serve: " << program->name() << " (pid " << a.pid
                      << ") attached to " << node << "\n";
    }
    if (!program) {
        bad.length = static_cast<uint32_t>(reason.size());
        wire::send_message(fd, bad, reason.data(), reason.size());
        close(fd);
        return;
    }
    c->os_pid = a.pid;
    c->tid = a.tid;
    c->program = program;
    ++m_threads[program->id()];
    c->call.op = wire::op::attach;
    c->call.payload = std::move(payload);
    c->st = state::queued;
    c->clock = hcasim::now();
    connection* raw = c.get();
    m_conns.push_back(std::move(c));
    m_to_spawn.push_back(raw);
    m_spawn.notify(sc_core::SC_ZERO_TIME);
}

void app_server::take_call(connection& c) {
    wire::request_header h;
    int fd = -1;
    if (wire::recv_message(c.fd, h, c.call.payload, &fd) || h.op == 0 ||
        h.op >= static_cast<uint32_t>(wire::op::last)) {
        if (fd >= 0) close(fd);
        c.gone = true;
        c.wake.notify(sc_core::SC_ZERO_TIME);
        return;
    }
    c.call.op = static_cast<wire::op>(h.op);
    c.call.fd = fd;
    c.st = state::queued;
    c.spin->armed = c.spin->fired = false;  // a watch still set fires for nothing
    // The call happens no earlier than anything the program may have seen: the calendar may
    // have run the model's callbacks ahead of the kernel's time (sim/kernel.h), and their writes
    // into the program's memory are already there.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time at = std::max({c.clock, now, detail::g_now});
    c.wake.notify(at - now);
}

bool app_server::holds(connection& c) {
    if (c.st != state::outside || c.gone) return false;
    const wall::time_point t = wall::now();
    const double ms = std::chrono::duration<double, std::milli>(t - c.left).count();
    // Within a millisecond of its last call a thread is taken to be on its way to the next one
    // (the tight loop of a program polling a CQ): /proc is read only after that.
    if (ms < 1) return true;
    const char s = thread_state(c.os_pid, c.tid);
    if (s != 'R' && s != 'D') return false;
    // How long it has been running: the millisecond above, then the CPU time it has had since
    // the first look. A thread waiting for a CPU on a loaded machine has not run, so it still
    // holds (wall time would take it for a thread polling its memory); without schedstat, wall
    // time.
    const int64_t run = thread_run_ns(c.os_pid, c.tid);
    // Milliseconds of CPU time since `base` (read at a first look: -2 until then), or of wall
    // time since `from` when the kernel does not say.
    auto ran_ms = [&](int64_t& base, wall::time_point from) {
        if (base == -2) base = run;
        return run >= 0 && base >= 0 ? static_cast<double>(run - base) / 1e6
                                     : std::chrono::duration<double, std::milli>(t - from).count();
    };
    if (ran_ms(c.run_base_ns, c.left + std::chrono::milliseconds(1)) + 1 <= m_opts.hold_limit_ms)
        return true;
    // Running past the hold limit, the thread is taken to wait by polling its memory: time moves
    // on without it until a DMA write into its memory becomes visible, and holds there while it
    // looks (another hold limit of its CPU time), then moves on to the next write.
    spin_watch& w = *c.spin;
    if (w.fired) {
        if (ran_ms(w.fired_run_ns, w.fired_at) <= m_opts.hold_limit_ms) return true;
        w.fired = w.armed = false;
    }
    if (!w.armed) {
        w.armed = true;
        std::shared_ptr<spin_watch> token = c.spin;
        connection* conn = &c;
        c.program->watch_memory([this, token, conn] {
            if (!token->armed || token->fired || token->gone) return;
            token->fired = true;
            token->fired_at = wall::now();
            token->fired_run_ns = -2;  // read at the thread's next look
            conn->clock = hcasim::now();
            // The run stops here: the program looks at what landed before time goes on.
            if (conn->clock < m_limit) {
                m_limit = conn->clock;
                calendar::get().set_limit(m_limit);
            }
            sc_core::sc_pause();
        });
    }
    return false;
}

bool app_server::horizon(sc_core::sc_time& h) {
    h = sc_core::sc_max_time();
    for (auto& c : m_conns) {
        if (c->st != state::outside || c->gone) continue;
        if (holds(*c)) {
            h = std::min(h, c->clock);
            continue;
        }
        // Asleep, perhaps in its call to us: a call already sent must be read before time moves.
        pollfd p{c->fd, POLLIN, 0};
        if (poll(&p, 1, 0) == 1) return false;
    }
    return true;
}

// Runs the simulation as far as it may go now: to the horizon, or a slice of it, or, with no
// thread to wait for, until it runs out of events or a call returns.
void app_server::advance() {
    sc_core::sc_time h;
    if (!horizon(h)) return;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time slice(100, sc_core::SC_US);
    if (h <= now) {
        if (sc_core::sc_pending_activity_at_current_time()) {
            m_limit = now;
            run_for(sc_core::SC_ZERO_TIME, sc_core::SC_RUN_TO_TIME, now);
        }
        return;
    }
    if (h == sc_core::sc_max_time()) {
        // Nothing to wait for: on to the next event (a slice at least, when it is sooner), the
        // calendar's callbacks no further (what a program sees of them stays at most a run ahead).
        if (!sc_core::sc_pending_activity()) return;
        const sc_core::sc_time d = std::max(sc_core::sc_time_to_pending_activity(), slice);
        m_limit = now + d;
        run_for(d, sc_core::SC_RUN_TO_TIME, m_limit);
        return;
    }
    m_limit = h;
    run_for(std::min(h - now, slice), sc_core::SC_RUN_TO_TIME, h);
}

int app_server::run(int listen_fd) {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaboration; the drivers boot in simulated time
    int interrupted = 0;
    wall::time_point busy = wall::now();  // when a program was last attached
    for (;;) {
        if (g_serve_signal) {
            interrupted = g_serve_signal;
            break;
        }
        if (!m_programs.empty() || !m_conns.empty()) busy = wall::now();
        if (m_opts.idle_exit_s > 0 &&
            std::chrono::duration<double>(wall::now() - busy).count() > m_opts.idle_exit_s)
            break;
        // Who can the simulation wait for? With nothing to run, the loop sleeps in poll.
        sc_core::sc_time h;
        const bool ready = horizon(h);
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        const bool can_run =
            ready &&
            ((h > now && (h != sc_core::sc_max_time() || sc_core::sc_pending_activity())) ||
             sc_core::sc_pending_activity_at_current_time());
        std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
        std::vector<connection*> who{nullptr};
        for (auto& c : m_conns) {
            if (c->st == state::closed || c->gone) continue;
            fds.push_back({c->fd, static_cast<short>(POLLIN | POLLRDHUP), 0});
            who.push_back(c.get());
        }
        if (poll(fds.data(), fds.size(), !ready || can_run ? 0 : 1) < 0 && errno != EINTR) return 3;
        if (fds[0].revents & POLLIN) accept_one(listen_fd);
        for (size_t i = 1; i < fds.size(); ++i) {
            connection& c = *who[i];
            if (!fds[i].revents) continue;
            if (c.st == state::outside && (fds[i].revents & POLLIN)) {
                take_call(c);
            } else if (fds[i].revents & (POLLHUP | POLLERR | POLLRDHUP)) {
                // The program went away inside a call: the call stops waiting and the thread ends.
                c.gone = true;
                c.wake.notify(sc_core::SC_ZERO_TIME);
            }
        }
        advance();
        // Connections whose thread has ended.
        for (auto it = m_conns.begin(); it != m_conns.end();) {
            if ((*it)->st == state::closed) {
                (*it)->spin->gone = true;  // a watch set for it fires for nothing
                close((*it)->fd);
                it = m_conns.erase(it);
            } else {
                ++it;
            }
        }
        if (m_any_attached && m_programs.empty() && !m_done.empty() && !m_written) {
            if (!write_stats(false)) return 3;
            if (m_opts.once) break;
        }
        if (!m_programs.empty()) m_written = false;
    }
    // Stopped with programs attached: what was simulated so far, marked interrupted. Stopped
    // idle: the stats of the last detach stand.
    if (interrupted && !m_programs.empty()) {
        write_stats(true);
        return 128 + interrupted;
    }
    if (m_any_attached && !m_written && !write_stats(false)) return 3;
    return 0;
}

bool app_server::write_stats(bool interrupted) {
    json stats = json::object();
    stats["hcasim_version"] = HCASIM_VERSION;
    stats["scenario"] = m_spec.name;
    stats["mode"] = "serve";
    stats["sim_time_ns"] = hcasim::now().to_seconds() * 1e9;
    stats["events"] = kernel_events();
    stats["seed"] = m_spec.seed;
    stats["interrupted"] = interrupted;
    json run = json::object();
    run["command_line"] = m_opts.command_line;
    run["sets"] = m_opts.sets;
    run["scenario_file"] = m_opts.scenario_file;
    run["git_commit"] = HCASIM_GIT_COMMIT;
    run["cpu_gap_ns"] = static_cast<double>(m_opts.cpu_gap_ps) / 1e3;
    run["poll_quantum_ns"] = static_cast<double>(m_opts.poll_quantum_ps) / 1e3;
    run["hold_limit_ms"] = m_opts.hold_limit_ms;
    stats["run"] = run;
    stats["config"] = m_spec.resolved_config();
    json apps = m_done;
    for (const auto& [id, p] : m_programs) apps.push_back(p->to_json());
    stats["apps"] = apps;
    json units = collect_unit_stats();
    stats["nodes"] = units["nodes"];
    stats["fabric"] = units["fabric"];
    output_file f(m_opts.out_dir + "/stats.json");
    f.stream() << stats.dump(2) << "\n";
    std::string problem;
    if (!f.commit(problem)) {
        std::cerr << "hcasim serve: " << problem << "\n";
        return false;
    }
    // The programs' verbs so far, as a trace (rewritten whenever the stats are).
    if (m_recorder && !m_recorder->write(m_opts.record,
                                         "recorded by hcasim serve from scenario " + m_spec.name +
                                             ": " + std::to_string(m_done.size()) + " programs" +
                                             (interrupted ? " (interrupted)" : ""),
                                         problem)) {
        std::cerr << "hcasim serve: " << problem << "\n";
        return false;
    }
    m_written = true;
    if (!m_opts.quiet) {
        std::cerr << "hcasim serve: stats: " << m_opts.out_dir << "/stats.json (simulated "
                  << hcasim::now().to_seconds() * 1e6 << " us)\n";
        if (m_recorder)
            std::cerr << "hcasim serve: record: " << m_opts.record << " (" << m_recorder->records()
                      << " records)\n";
    }
    return true;
}

}  // namespace

std::string default_socket_path() {
    if (const char* env = std::getenv(wire::env_socket); env && *env) return env;
    if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir && *dir)
        return std::string(dir) + "/hcasim.sock";
    return "/tmp/hcasim-" + std::to_string(getuid()) + ".sock";
}

int serve_scenario(const scenario& s, const serve_options& given) {
    serve_options opts = given;
    if (opts.socket_path.empty()) opts.socket_path = default_socket_path();
    if (opts.out_dir.empty()) opts.out_dir = "out/" + s.name;
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    std::string problem;
    if (!check_output_dir(opts.out_dir, problem)) {
        std::cerr << "hcasim serve: " << problem
                  << " (expected a folder hcasim can write, -o DIR)\n";
        return 2;
    }
    const long page = sysconf(_SC_PAGESIZE);
    for (const auto& [name, cfg] : s.nodes)
        if (cfg.host.page_size != static_cast<uint64_t>(page)) {
            std::cerr << s.file << ": /nodes/" << name << "/host/page_size: " << cfg.host.page_size
                      << " (expected this machine's page size, " << page
                      << ": attached programs share their pages with the simulated host)\n";
            return 2;
        }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (opts.socket_path.size() >= sizeof addr.sun_path) {
        std::cerr << "hcasim serve: --socket " << opts.socket_path << ": longer than "
                  << sizeof addr.sun_path - 1 << " bytes\n";
        return 2;
    }
    std::strcpy(addr.sun_path, opts.socket_path.c_str());
    const int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // A socket file nobody listens on is a server's that ended: it may go.
    if (connect(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        std::cerr << "hcasim serve: --socket " << opts.socket_path
                  << ": another server listens there (expected a free path)\n";
        close(lfd);
        return 2;
    }
    unlink(opts.socket_path.c_str());
    if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) || listen(lfd, 64)) {
        std::cerr << "hcasim serve: --socket " << opts.socket_path << ": " << std::strerror(errno)
                  << "\n";
        close(lfd);
        return 2;
    }
    g_serve_signal = 0;
    struct sigaction on {
    }, old_int{}, old_term{};
    on.sa_handler = on_serve_signal;
    sigemptyset(&on.sa_mask);
    sigaction(SIGINT, &on, &old_int);
    sigaction(SIGTERM, &on, &old_term);
    signal(SIGPIPE, SIG_IGN);

    int code = 0;
    {
        world w(s);
        std::unique_ptr<trace_recorder> recorder;
        if (!opts.record.empty()) {
            std::vector<std::pair<std::string, host*>> hosts;
            for (const auto& [name, cfg] : s.nodes) hosts.emplace_back(name, &w.at(name).host());
            recorder = std::make_unique<trace_recorder>(hosts);
        }
        app_server server("apps", w, s, opts, recorder.get());
        if (!opts.quiet)
            std::cerr << "hcasim serve: scenario " << s.name << " on " << opts.socket_path
                      << " (attach with: hcasim exec --socket " << opts.socket_path
                      << " --node NODE -- COMMAND)\n";
        code = server.run(lfd);
    }
    close(lfd);
    unlink(opts.socket_path.c_str());
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return code;
}

}  // namespace hcasim
