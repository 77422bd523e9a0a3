#include "sim/tracer.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/kernel.h"
#include "sim/output_file.h"
#include "sim/stats.h"
#include "sim/units.h"
#include "sim/vcd.h"

namespace hcasim {

bool tracer::s_on = false;

tracer& tracer::instance() {
    static tracer t;
    return t;
}

void tracer::enable(bool events, bool waves) {
    m_events = events;
    m_waves = waves;
    s_on = events || waves;
}

bool tracer::set_units(const std::string& list) {
    m_prefixes.clear();
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (item.empty() || item.front() == '.' || item.back() == '.') return false;
        m_prefixes.push_back(item);
    }
    return !m_prefixes.empty();
}

bool tracer::set_window(const std::string& text) {
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return false;
    const std::string from = text.substr(0, colon), to = text.substr(colon + 1);
    if (from.empty() && to.empty()) return false;
    auto parse = [](const std::string& s, uint64_t dflt, uint64_t& out) {
        if (s.empty()) {
            out = dflt;
            return true;
        }
        auto v = parse_time_ps(json(s));
        if (!v) return false;
        out = *v;
        return true;
    };
    uint64_t a = 0, b = 0;
    if (!parse(from, 0, a) || !parse(to, UINT64_MAX, b) || b <= a) return false;
    m_from_ps = a;
    m_to_ps = b;
    return true;
}

bool tracer::selected(const std::string& name) const {
    if (m_prefixes.empty()) return true;
    for (const auto& p : m_prefixes)
        if (name.compare(0, p.size(), p) == 0 && (name.size() == p.size() || name[p.size()] == '.'))
            return true;
    return false;
}

uint32_t tracer::unit_index(const char* unit) {
    auto it = m_unit_ids.find(unit);
    if (it != m_unit_ids.end()) return it->second;
    const uint32_t i = static_cast<uint32_t>(m_units.size());
    m_units.emplace_back(unit);
    m_unit_ids.emplace(unit, i);
    return i;
}

uint32_t tracer::signal_index(const void* key, const char* unit, const char* signal) {
    auto k = std::make_pair(key, signal);
    auto it = m_signal_ids.find(k);
    if (it != m_signal_ids.end()) return it->second;
    const uint32_t i = static_cast<uint32_t>(m_signals.size());
    m_signals.push_back({unit, signal, static_cast<const uint64_t*>(unit ? nullptr : key)});
    m_signal_ids.emplace(k, i);
    return i;
}

std::string tracer::signal_name(uint32_t index) const {
    const signal_decl& s = m_signals[index];
    if (s.unit) return std::string(s.unit) + "." + s.signal;
    std::string n = stats_registry::instance().counter_path(s.counter);
    return n.empty() ? "unnamed." + std::to_string(index) : n;
}

void tracer::span(const char* unit, const char* name, uint64_t id, const sc_core::sc_time& start,
                  const sc_core::sc_time& end, uint64_t bytes) {
    if (!m_events) return;
    m_spans.push_back(
        {unit_index(unit), name, id, to_ps(start), std::max(to_ps(end), to_ps(start)), bytes});
}

void tracer::level(const char* unit, const char* signal, const sc_core::sc_time& start,
                   const sc_core::sc_time& end, int64_t amount) {
    const uint32_t s = signal_index(unit, unit, signal);
    m_deltas.push_back({to_ps(start), s, amount});
    m_deltas.push_back({to_ps(end), s, -amount});
}

void tracer::add(const char* unit, const char* signal, int64_t delta) {
    m_deltas.push_back({to_ps(hcasim::now()), signal_index(unit, unit, signal), delta});
}

void tracer::pulse(const uint64_t* counter, const sc_core::sc_time& at, bool timeline) {
    const uint32_t s = signal_index(counter, nullptr, "pulse");
    m_signals[s].timeline = timeline;
    const uint64_t ps = to_ps(at);
    m_deltas.push_back({ps, s, 1});
    m_deltas.push_back({ps + 1000, s, -1});
}

void tracer::mark(const void* owner, const char* stage, uint64_t id) {
    m_marks[{{owner, stage}, id}] = to_ps(hcasim::now());
}

sc_core::sc_time tracer::marked(const void* owner, const char* stage, uint64_t id) const {
    auto it = m_marks.find({{owner, stage}, id});
    return it == m_marks.end() ? hcasim::now() : ps_time(it->second);
}

std::map<std::string, std::vector<tracer::change>> tracer::signal_changes() const {
    // Deltas in time order (stable: booking order within one time), folded to one value per time.
    std::vector<delta_rec> sorted = m_deltas;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const delta_rec& a, const delta_rec& b) { return a.ps < b.ps; });
    std::vector<int64_t> value(m_signals.size(), 0);
    std::vector<std::string> names(m_signals.size());
    std::vector<bool> keep(m_signals.size());
    std::map<std::string, std::vector<change>> out;
    for (uint32_t i = 0; i < m_signals.size(); ++i) {
        names[i] = signal_name(i);
        keep[i] = selected(names[i]);
        if (keep[i]) out[names[i]];
    }
    for (const delta_rec& d : sorted) {
        value[d.signal] += d.delta;
        if (!keep[d.signal]) continue;
        auto& v = out[names[d.signal]];
        if (!v.empty() && v.back().ps == d.ps)
            v.back().value = value[d.signal];
        else
            v.push_back({d.ps, value[d.signal]});
    }
    // Drop changes that end where they began (a pulse folded into one time).
    for (auto& [name, v] : out) {
        std::vector<change> kept;
        for (const change& c : v)
            if (kept.empty() ? c.value != 0 : kept.back().value != c.value) kept.push_back(c);
        v = std::move(kept);
    }
    return out;
}

bool tracer::write_vcd(const std::string& path, std::string& problem) const {
    output_file out(path);
    std::ostream& f = out.stream();
    std::map<std::string, std::vector<vcd_change>> signals;
    for (const auto& [name, changes] : signal_changes()) {
        auto& v = signals[name];
        for (const change& c : changes) v.push_back({c.ps, c.value});
    }
    ::hcasim::write_vcd(f, signals, m_from_ps, dump_end_ps());
    return out.commit(problem);
}

uint64_t tracer::dump_end_ps() const {
    return std::min(m_to_ps, std::max(to_ps(hcasim::now()), m_from_ps));
}

bool tracer::write_gtkw(const std::string& path, const std::string& vcd_name,
                        std::string& problem) const {
    output_file out(path);
    // The dump's signals are the selected ones, each name once (signal_changes keeps every one,
    // changed or not, by name).
    std::set<std::string> names;
    for (uint32_t i = 0; i < m_signals.size(); ++i) {
        std::string name = signal_name(i);
        if (selected(name)) names.insert(std::move(name));
    }
    ::hcasim::write_gtkw(out.stream(), {names.begin(), names.end()}, vcd_name, m_from_ps,
                         dump_end_ps());
    return out.commit(problem);
}

namespace {

// Microseconds with picosecond precision, as the Trace Event format counts time.
std::string us(uint64_t ps) {
    std::string s = std::to_string(ps / 1000000) + ".";
    std::string frac = std::to_string(ps % 1000000);
    return s + std::string(6 - frac.size(), '0') + frac;
}

std::string json_str(const std::string& s) {
    return json(s).dump();
}

}  // namespace

bool tracer::write_trace(const std::string& path, std::string& problem) const {
    output_file file(path);
    std::ostream& f = file.stream();
    // Processes: the first name component (node, or "fabric"); threads: the unit within it, one
    // lane per set of overlapping spans (a thread's slices must nest).
    std::map<std::string, int> pids;
    auto pid_of = [&](const std::string& name) {
        const std::string p = name.substr(0, name.find('.'));
        auto it = pids.find(p);
        if (it != pids.end()) return it->second;
        const int id = static_cast<int>(pids.size()) + 1;
        pids[p] = id;
        return id;
    };
    auto rest_of = [](const std::string& name) {
        const size_t dot = name.find('.');
        return dot == std::string::npos ? name : name.substr(dot + 1);
    };
    std::vector<const span_rec*> spans;
    for (const span_rec& s : m_spans)
        if (selected(m_units[s.unit]) && s.end_ps >= m_from_ps && s.start_ps <= m_to_ps)
            spans.push_back(&s);
    std::stable_sort(spans.begin(), spans.end(), [](const span_rec* a, const span_rec* b) {
        return a->start_ps < b->start_ps;
    });

    struct placed {
        const span_rec* s;
        int pid, tid;
    };
    std::vector<placed> out;
    std::map<std::pair<uint32_t, size_t>, int> lane_tid;  // (unit, lane) -> tid
    std::map<uint32_t, std::vector<uint64_t>> lane_end;   // unit -> end of each lane's last span
    std::vector<std::pair<int, std::pair<int, std::string>>> threads;  // pid, tid, name
    int next_tid = 1;
    auto place = [&](const span_rec* s, uint32_t unit, const std::string& unit_name) {
        auto& ends = lane_end[unit];
        size_t lane = 0;
        while (lane < ends.size() && ends[lane] > s->start_ps) ++lane;
        if (lane == ends.size()) ends.push_back(0);
        ends[lane] = s->end_ps;
        auto key = std::make_pair(unit, lane);
        auto it = lane_tid.find(key);
        const int pid = pid_of(unit_name);
        if (it == lane_tid.end()) {
            it = lane_tid.emplace(key, next_tid++).first;
            threads.push_back(
                {pid,
                 {it->second, rest_of(unit_name) + (lane ? " #" + std::to_string(lane + 1) : "")}});
        }
        out.push_back({s, pid, it->second});
    };
    for (const span_rec* s : spans) place(s, s->unit, m_units[s->unit]);

    // One span per WQE from its first stage to its last, on the node that posted it.
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> wqe_extent;
    std::map<uint64_t, std::string> wqe_node;
    for (const span_rec* s : spans) {
        if (!s->id) continue;
        auto it = wqe_extent.find(s->id);
        if (it == wqe_extent.end()) {
            wqe_extent[s->id] = {s->start_ps, s->end_ps};
            wqe_node[s->id] = m_units[s->unit].substr(0, m_units[s->unit].find('.'));
        } else {
            it->second.first = std::min(it->second.first, s->start_ps);
            it->second.second = std::max(it->second.second, s->end_ps);
        }
    }
    std::vector<span_rec> wqe_spans;
    wqe_spans.reserve(wqe_extent.size());
    for (const auto& [id, ext] : wqe_extent)
        wqe_spans.push_back({0, "wqe", id, ext.first, ext.second, 0});
    std::stable_sort(wqe_spans.begin(), wqe_spans.end(),
                     [](const span_rec& a, const span_rec& b) { return a.start_ps < b.start_ps; });
    std::map<std::string, uint32_t> wqe_units;
    for (const span_rec& s : wqe_spans) {
        const std::string unit = wqe_node[s.id] + ".wqe";
        auto [it, fresh] =
            wqe_units.emplace(unit, static_cast<uint32_t>(m_units.size() + wqe_units.size()));
        (void)fresh;
        place(&s, it->second, unit);
    }

    auto signals = signal_changes();
    for (uint32_t i = 0; i < m_signals.size(); ++i)
        if (!m_signals[i].timeline) signals.erase(signal_name(i));
    for (const auto& sig : signals) pid_of(sig.first);

    f << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"hcasim\",\"time\":"
         "\"simulated\"},\"traceEvents\":[\n";
    bool first = true;
    auto event = [&](const std::string& body) {
        f << (first ? "" : ",\n") << "{" << body << "}";
        first = false;
    };
    for (const auto& [name, pid] : pids)
        event("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
              ",\"tid\":0,\"args\":{\"name\":" + json_str(name) + "}");
    for (const auto& [pid, t] : threads)
        event("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
              std::to_string(t.first) + ",\"args\":{\"name\":" + json_str(t.second) + "}");
    for (const placed& p : out) {
        const span_rec& s = *p.s;
        std::string args = "\"bytes\":" + std::to_string(s.bytes);
        if (s.id)
            args = "\"qpn\":" + std::to_string(s.id >> 32) +
                   ",\"wqe\":" + std::to_string(s.id & 0xffffffffu) + "," + args;
        std::string name = s.name;
        if (name == "wqe")
            name = "wqe " + std::to_string(s.id >> 32) + ":" + std::to_string(s.id & 0xffffffffu);
        event("\"ph\":\"X\",\"cat\":\"wqe\",\"name\":" + json_str(name) +
              ",\"pid\":" + std::to_string(p.pid) + ",\"tid\":" + std::to_string(p.tid) +
              ",\"ts\":" + us(s.start_ps) + ",\"dur\":" + us(s.end_ps - s.start_ps) +
              ",\"args\":{" + args + "}");
    }
    // Flow arrows through the stages of each WQE, in time order (the WQE span itself excluded).
    std::map<uint64_t, std::vector<const placed*>> flows;
    for (const placed& p : out)
        if (p.s->id && std::string(p.s->name) != "wqe") flows[p.s->id].push_back(&p);
    for (auto& [id, steps] : flows) {
        if (steps.size() < 2) continue;
        std::stable_sort(steps.begin(), steps.end(), [](const placed* a, const placed* b) {
            return a->s->start_ps < b->s->start_ps;
        });
        for (size_t i = 0; i < steps.size(); ++i) {
            const char* ph = i == 0 ? "s" : (i + 1 == steps.size() ? "f" : "t");
            event(std::string("\"ph\":\"") + ph + "\",\"cat\":\"wqe\",\"name\":\"wqe\",\"id\":" +
                  std::to_string(id) + ",\"pid\":" + std::to_string(steps[i]->pid) +
                  ",\"tid\":" + std::to_string(steps[i]->tid) +
                  ",\"ts\":" + us(steps[i]->s->start_ps) + (i ? ",\"bp\":\"e\"" : ""));
        }
    }
    // Counter tracks for the signals.
    for (const auto& [name, changes] : signals) {
        const int pid = pid_of(name);
        const std::string track = rest_of(name);
        int64_t before = 0;
        bool started = false;
        for (const change& c : changes) {
            if (c.ps < m_from_ps) {
                before = c.value;
                continue;
            }
            if (c.ps > m_to_ps) break;
            if (!started && c.ps > m_from_ps)
                event("\"ph\":\"C\",\"name\":" + json_str(track) +
                      ",\"pid\":" + std::to_string(pid) + ",\"ts\":" + us(m_from_ps) +
                      ",\"args\":{\"value\":" + std::to_string(before) + "}");
            started = true;
            event("\"ph\":\"C\",\"name\":" + json_str(track) + ",\"pid\":" + std::to_string(pid) +
                  ",\"ts\":" + us(c.ps) + ",\"args\":{\"value\":" + std::to_string(c.value) + "}");
        }
    }
    f << "\n]}\n";
    return file.commit(problem);
}

}  // namespace hcasim
