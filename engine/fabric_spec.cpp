#include "engine/fabric_spec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/ops.h"
#include "engine/problems.h"
#include "fabric/vl_arbiter.h"

namespace hcasim {

const std::vector<std::string>& fabric_topologies() {
    static const std::vector<std::string> names = {"star", "fat_tree"};
    return names;
}

namespace {

const std::vector<std::string> k_fabric_keys = {"links",  "switches", "topology",
                                                "switch", "link",     "routing",
                                                "leaves", "spines",   "oversubscription"};

uint64_t ceil_div(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

// The back-to-back link two nodes get when nothing declares links (declared at `pointer`).
link_spec default_link(const scenario& s, const std::string& pointer) {
    link_spec l;
    l.a = s.nodes[0].first;
    l.b = s.nodes[1].first;
    l.pointer = pointer;
    return l;
}

class fabric_loader {
  public:
    fabric_loader(scenario& s, diag& d) : m_s(s), m_d(d) {}

    void load(const json& f) {
        if (!f.is_object()) {
            m_d.error("/fabric", type_problem(f),
                      "an object {\"links\": [...], \"switches\": {...}} or {\"topology\": ...}");
            return;
        }
        for (auto k = f.begin(); k != f.end(); ++k)
            if (!contains(k_fabric_keys, k.key()))
                m_d.error(pointer_join("/fabric", k.key()), unknown("key", k.key(), k_fabric_keys),
                          "one of " + joined(k_fabric_keys));
        // Keys of the form the fabric does not take.
        auto refuse = [&](std::initializer_list<const char*> keys, const std::string& problem,
                          const std::string& expected) {
            for (const char* k : keys)
                if (f.contains(k))
                    m_d.error(pointer_join("/fabric", k), std::string("\"") + k + "\" " + problem,
                              expected);
        };
        auto t = f.find("topology");
        const bool fat_tree = t != f.end() && *t == "fat_tree";
        m_s.routing = fat_tree ? routing_engine::up_down : routing_engine::min_hop;
        if (auto r = f.find("routing"); r != f.end()) {
            const routing_engine* e =
                r->is_string() ? routing_engine_named(r->get<std::string>()) : nullptr;
            if (e)
                m_s.routing = *e;
            else
                m_d.error("/fabric/routing",
                          r->is_string() ? unknown("routing engine", r->get<std::string>(),
                                                   routing_engine_names())
                                         : type_problem(*r),
                          "one of minhop (shortest paths), updn (up/down; the default of "
                          "fat_tree)");
        }
        if (!fat_tree)
            refuse({"leaves", "spines", "oversubscription"}, "without \"topology\": \"fat_tree\"",
                   "leaves, spines and oversubscription for a generated fat tree only");
        if (t != f.end()) {
            refuse({"links", "switches"}, "next to \"topology\"",
                   "either a generated topology or switches and links given one by one");
            generate(f, *t);
            return;
        }
        // Neither links nor switches: two nodes get their default back-to-back link, as without
        // `fabric`, and `link` configures it (what `--set fabric.link.faults.loss=1e-4` reaches).
        const bool undeclared = !f.contains("links") && !f.contains("switches");
        refuse({"switch"}, "without \"topology\"",
               "defaults for a generated topology's switches; give a declared switch its own "
               "parameters");
        if (!undeclared)
            refuse({"link"}, "with \"links\" or \"switches\"",
                   "the parameters of each declared link in its entry (/fabric/links/N/faults, "
                   "...); link configures a generated topology's links, or two nodes' default "
                   "link");
        else if (auto c = f.find("link"); c != f.end())
            load_default_link(*c);
        else if (m_s.nodes.size() == 2)
            m_s.links.push_back(default_link(m_s, "/fabric"));
        if (auto sw = f.find("switches"); sw != f.end()) load_switches(*sw);
        if (auto links = f.find("links"); links != f.end()) load_links(*links);
    }

  private:
    // fabric.link alone: the parameters of the link two nodes get without fabric.links.
    void load_default_link(const json& c) {
        if (m_s.nodes.size() != 2) {
            m_d.error("/fabric/link",
                      "a default link for " + std::to_string(m_s.nodes.size()) + " node" +
                          (m_s.nodes.size() == 1 ? "" : "s"),
                      "two nodes (the default link joins them), or fabric.links for more, or a "
                      "topology");
            return;
        }
        link_spec l = default_link(m_s, "/fabric/link");
        l.latency_given = c.is_object() && c.contains("latency");
        load_config(l.config, c, l.pointer, m_d);
        m_s.links.push_back(l);
    }

    void load_switches(const json& sw) {
        if (!sw.is_object()) {
            m_d.error("/fabric/switches", type_problem(sw),
                      "an object: switch name -> switch configuration");
            return;
        }
        for (auto it = sw.begin(); it != sw.end(); ++it) {
            const std::string p = pointer_join("/fabric/switches", it.key());
            if (!is_identifier(it.key())) {
                m_d.error(p, "bad switch name \"" + it.key() + "\"",
                          "a name matching [A-Za-z_][A-Za-z0-9_]*");
                continue;
            }
            if (m_s.node(it.key())) {
                m_d.error(p, "switch \"" + it.key() + "\" has the name of a node",
                          "a name no node has");
                continue;
            }
            switch_spec spec;
            spec.name = it.key();
            spec.pointer = p;
            load_config(spec.config, *it, p, m_d);
            check_vl_tables(spec.config, p);
            m_s.switches.push_back(spec);
        }
    }

    // The SL-to-VL and VL arbitration tables in OpenSM's notation, each VL an SL uses weighted.
    void check_vl_tables(const switch_config& c, const std::string& p) {
        std::string why;
        const auto sl2vl = parse_sl2vl(c.sl2vl, c.vls, why);
        if (!sl2vl) m_d.error(pointer_join(p, "sl2vl"), why, "16 comma-separated VLs, one per SL");
        std::optional<std::vector<vlarb_entry>> tables[2];
        const char* keys[2] = {"vlarb_high", "vlarb_low"};
        for (int t = 0; t < 2; ++t) {
            tables[t] = parse_vlarb(t == 0 ? c.vlarb_high : c.vlarb_low, c.vls, why);
            if (!tables[t])
                m_d.error(pointer_join(p, keys[t]), why, "\"VL:weight,...\" as OpenSM writes it");
        }
        if (!sl2vl || !tables[0] || !tables[1] || c.vlarb_low.empty()) return;
        for (size_t sl = 0; sl < sl2vl->size(); ++sl) {
            const uint8_t vl = (*sl2vl)[sl];
            bool weighted = false;
            for (const auto& table : tables)
                for (const vlarb_entry& e : *table) weighted = weighted || (e.vl == vl && e.weight);
            if (weighted) continue;
            m_d.error(pointer_join(p, "vlarb_low"),
                      "VL " + std::to_string(vl) + ", which SL " + std::to_string(sl) +
                          " travels on, has no weight in either table (its packets could never "
                          "leave)",
                      "an entry VL:weight with a weight above 0 for every VL an SL uses");
            return;
        }
    }

    void load_links(const json& links) {
        if (!links.is_array()) {
            m_d.error("/fabric/links", type_problem(links), "an array of links");
            return;
        }
        for (size_t i = 0; i < links.size(); ++i) {
            const json& l = links[i];
            const std::string p = pointer_join("/fabric/links", i);
            if (!l.is_object()) {
                m_d.error(p, type_problem(l),
                          "an object {\"a\", \"b\", \"a_port\", \"b_port\", \"latency\", "
                          "\"gbps\"}");
                continue;
            }
            link_spec spec;
            spec.pointer = p;
            bool ok = true;
            for (const char* end : {"a", "b"}) {
                const std::string ep = pointer_join(p, end);
                auto e = l.find(end);
                if (e == l.end()) {
                    m_d.error(p, std::string("missing key \"") + end + "\"",
                              "a node or switch name");
                    ok = false;
                } else if (!e->is_string() || !(m_s.node(e->get<std::string>()) ||
                                                m_s.fabric_switch(e->get<std::string>()))) {
                    m_d.error(ep,
                              e->is_string()
                                  ? "unknown node or switch \"" + e->get<std::string>() + "\""
                                  : type_problem(*e),
                              "the name of a node or of a switch in fabric.switches");
                    ok = false;
                } else {
                    (std::string(end) == "a" ? spec.a : spec.b) = e->get<std::string>();
                }
            }
            if (ok && spec.a == spec.b) {
                m_d.error(pointer_join(p, "b"), "a link from \"" + spec.a + "\" to itself",
                          "two different ends");
                ok = false;
            }
            // A node end may name its HCA port (two-port HCAs); by default the next free one.
            for (const char* key : {"a_port", "b_port"}) {
                auto e = l.find(key);
                if (e == l.end()) continue;
                const std::string& end = key[0] == 'a' ? spec.a : spec.b;
                const node_config* n = ok ? m_s.node(end) : nullptr;
                if (ok && !n) {
                    m_d.error(pointer_join(p, key), "a port for switch \"" + end + "\"",
                              "a port only for a node's end (switch ports are numbered as linked)");
                    ok = false;
                } else if (n && (!e->is_number_unsigned() || e->get<uint64_t>() < 1 ||
                                 e->get<uint64_t>() > n->hca.ports)) {
                    m_d.error(pointer_join(p, key),
                              e->is_number() ? "port " + e->dump() : type_problem(*e),
                              "a port of node \"" + end + "\": 1.." + std::to_string(n->hca.ports) +
                                  " (hca.ports)");
                    ok = false;
                } else if (n) {
                    (key[0] == 'a' ? spec.a_port : spec.b_port) =
                        static_cast<int>(e->get<uint64_t>());
                }
            }
            json params = l;
            for (const char* key : {"a", "b", "a_port", "b_port"}) params.erase(key);
            spec.latency_given = params.contains("latency");
            load_config(spec.config, params, p, m_d);
            const ib_link_faults& f = spec.config.faults;
            if (f.down_every.ps > 0 && f.down_every.ps <= f.down_for.ps)
                m_d.error(p + "/faults/down_every", "a period not longer than the down time",
                          "0 (down once) or more than faults.down_for");
            if (ok) add_link(spec);
        }
    }

    // Checks the ends' free ports, gives a node end without a port its next free one, and records
    // the link.
    void add_link(link_spec spec) {
        bool ok = true;
        for (const std::string* end : {&spec.a, &spec.b}) {
            const bool is_a = end == &spec.a;
            const std::string ep = pointer_join(spec.pointer, is_a ? "a" : "b");
            if (const node_config* n = m_s.node(*end)) {
                int& port = is_a ? spec.a_port : spec.b_port;
                std::set<int>& used = m_node_ports[*end];
                if (port == 0)
                    for (int q = 1; q <= static_cast<int>(n->hca.ports) && port == 0; ++q)
                        if (!used.count(q)) port = q;
                if (port == 0) {
                    m_d.error(ep,
                              "node \"" + *end + "\" has all its " + std::to_string(n->hca.ports) +
                                  " HCA port" + (n->hca.ports == 1 ? "" : "s") +
                                  " linked already (first at " + m_first[*end] + ")",
                              "at most hca.ports links per node (a_port/b_port name a port)");
                    ok = false;
                } else if (used.count(port)) {
                    m_d.error(pointer_join(spec.pointer, is_a ? "a_port" : "b_port"),
                              "port " + std::to_string(port) + " of node \"" + *end +
                                  "\" is linked already",
                              "a port not yet linked");
                    ok = false;
                }
            } else if (const switch_spec* sw = m_s.fabric_switch(*end);
                       sw && m_used[*end] >= sw->config.ports) {
                m_d.error(ep,
                          "switch \"" + *end + "\" has all its " +
                              std::to_string(sw->config.ports) + " ports linked already",
                          "at most fabric.switches." + *end + ".ports links");
                ok = false;
            }
        }
        if (!ok) return;
        for (const std::string* end : {&spec.a, &spec.b}) {
            if (!m_used[*end]++) m_first[*end] = spec.pointer;
        }
        if (spec.a_port) m_node_ports[spec.a].insert(spec.a_port);
        if (spec.b_port) m_node_ports[spec.b].insert(spec.b_port);
        m_s.links.push_back(spec);
    }

    void generate(const json& f, const json& t) {
        if (!t.is_string() || !contains(fabric_topologies(), t.get<std::string>())) {
            m_d.error("/fabric/topology",
                      t.is_string() ? unknown("topology", t.get<std::string>(), fabric_topologies())
                                    : type_problem(t),
                      "one of " + joined(fabric_topologies()) +
                          " (star: every node on one switch, sw0; fat_tree: leaves and spines)");
            return;
        }
        switch_spec sw;
        sw.pointer = "/fabric/switch";
        if (auto c = f.find("switch"); c != f.end()) {
            load_config(sw.config, *c, sw.pointer, m_d);
            check_vl_tables(sw.config, sw.pointer);
        }
        link_spec proto;
        proto.pointer = "/fabric/link";
        if (auto c = f.find("link"); c != f.end()) {
            proto.latency_given = c->is_object() && c->contains("latency");
            load_config(proto.config, *c, proto.pointer, m_d);
        }
        if (t == "star")
            star(sw, proto);
        else
            fat_tree(f, sw, proto);
    }

    // Every node on one switch, sw0.
    void star(switch_spec sw, const link_spec& proto) {
        sw.name = "sw0";
        if (m_s.node(sw.name)) {
            m_d.error("/fabric/topology", "a node is named \"sw0\", the star's switch",
                      "no node named sw0");
            return;
        }
        if (m_s.nodes.size() > sw.config.ports) {
            m_d.error("/fabric/topology",
                      "a star of " + std::to_string(m_s.nodes.size()) + " nodes on a switch of " +
                          std::to_string(sw.config.ports) + " ports",
                      "fabric.switch.ports of at least the number of nodes");
            return;
        }
        m_s.switches.push_back(sw);
        for (const auto& [name, cfg] : m_s.nodes) {
            (void)cfg;
            link(proto, name, sw.name);
        }
    }

    // A two-level fat tree: the nodes, in file order, fill leaf0, leaf1, ... (`hosts` each, the
    // last one the rest); each leaf has ceil(hosts / oversubscription) uplinks, dealt round-robin
    // over the spines (one to each spine when there are as many spines as uplinks, the default).
    void fat_tree(const json& f, switch_spec sw, const link_spec& proto) {
        const size_t before = m_d.lines().size();
        const uint64_t n = m_s.nodes.size(), ports = sw.config.ports;
        double over = 1;
        if (auto o = f.find("oversubscription"); o != f.end()) {
            if (o->is_number() && o->get<double>() >= 1 &&
                o->get<double>() <= k_max_oversubscription)
                over = o->get<double>();
            else
                m_d.error("/fabric/oversubscription",
                          o->is_number() ? "oversubscription " + o->dump() : type_problem(*o),
                          "a number from 1 to " + std::to_string(k_max_oversubscription) +
                              ": hosts per leaf over uplinks per leaf (2 for 2:1)");
        }
        // By default as few leaves as hold the nodes with their uplinks.
        const uint64_t fit = std::max<uint64_t>(
            1, static_cast<uint64_t>(static_cast<double>(ports) * over / (over + 1)));
        const uint64_t leaves = count(f, "leaves", std::max<uint64_t>(1, ceil_div(n, fit)));
        if (!leaves || m_d.lines().size() != before) return;
        if (leaves > n) {
            m_d.error("/fabric/leaves",
                      std::to_string(leaves) + " leaves for " + std::to_string(n) + " nodes",
                      "at most one leaf per node");
            return;
        }
        const uint64_t hosts = ceil_div(n, leaves);
        const uint64_t up = std::max<uint64_t>(
            1, static_cast<uint64_t>(std::ceil(static_cast<double>(hosts) / over - 1e-9)));
        const uint64_t spines = count(f, "spines", up);
        if (!spines) return;
        if (spines > up) {
            m_d.error(
                "/fabric/spines",
                std::to_string(spines) + " spines for " + std::to_string(up) + " uplinks per leaf",
                "at most the uplinks per leaf, ceil(hosts per leaf / oversubscription)");
            return;
        }
        if (hosts + up > ports || leaves * ceil_div(up, spines) > ports) {
            m_d.error("/fabric/topology",
                      "a fat tree of " + std::to_string(leaves) + " leaves (" +
                          std::to_string(hosts) + " nodes and " + std::to_string(up) +
                          " uplinks each) and " + std::to_string(spines) +
                          " spines on switches of " + std::to_string(ports) + " ports",
                      "more leaves, fewer nodes, or a larger fabric.switch.ports");
            return;
        }
        auto add_switch = [&](const std::string& name) {
            if (m_s.node(name)) {
                m_d.error("/fabric/topology", "a node is named \"" + name + "\", a fat-tree switch",
                          "no node named leaf<i> or spine<j>");
                return false;
            }
            switch_spec s = sw;
            s.name = name;
            m_s.switches.push_back(s);
            return true;
        };
        for (uint64_t l = 0; l < leaves; ++l)
            if (!add_switch("leaf" + std::to_string(l))) return;
        for (uint64_t p = 0; p < spines; ++p)
            if (!add_switch("spine" + std::to_string(p))) return;
        for (uint64_t i = 0; i < n; ++i)
            link(proto, m_s.nodes[i].first, "leaf" + std::to_string(i / hosts));
        for (uint64_t l = 0; l < leaves; ++l)
            for (uint64_t k = 0; k < up; ++k)
                link(proto, "leaf" + std::to_string(l), "spine" + std::to_string(k % spines));
    }

    // A positive integer key of the generator; `dflt` when absent, 0 after reporting a bad one.
    uint64_t count(const json& f, const char* key, uint64_t dflt) {
        auto v = f.find(key);
        if (v == f.end()) return dflt;
        if (v->is_number_unsigned() && v->get<uint64_t>() >= 1 &&
            v->get<uint64_t>() <= k_max_tree_switches)
            return v->get<uint64_t>();
        m_d.error(pointer_join("/fabric", key),
                  v->is_number() ? key + (" " + v->dump()) : type_problem(*v),
                  "an integer from 1 to " + std::to_string(k_max_tree_switches));
        return 0;
    }

    void link(const link_spec& proto, const std::string& a, const std::string& b) {
        link_spec l = proto;
        l.a = a;
        l.b = b;
        m_s.links.push_back(l);
    }

    scenario& m_s;
    diag& m_d;
    std::map<std::string, uint64_t> m_used;             // links per node or switch
    std::map<std::string, std::string> m_first;         // pointer of an end's first link
    std::map<std::string, std::set<int>> m_node_ports;  // HCA ports linked, per node
};

}  // namespace

void load_fabric(const json& doc, scenario& s, diag& d) {
    auto it = doc.find("fabric");
    if (it == doc.end()) {
        // Two nodes and nothing said: one back-to-back link.
        if (s.nodes.size() == 2) s.links.push_back(default_link(s, "/fabric"));
        return;
    }
    fabric_loader(s, d).load(*it);
}

}  // namespace hcasim
