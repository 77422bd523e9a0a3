// The scenario checker's state, shared by engine/scenario.cpp (the document, nodes, program
// steps, workloads and trace) and engine/scenario_fields.cpp (a step's or workload's fields:
// their values, references to resources, variables, expectations and saves). Internal to the
// loader: everything else reads a scenario through engine/scenario.h.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/ops.h"
#include "engine/problems.h"
#include "engine/scenario.h"

namespace hcasim {
namespace scenario_check {

// Checks everything after the JSON parse. Resources are tracked per node as steps define them,
// so a reference must name something an earlier step defined.
class checker {
  public:
    checker(scenario& s, diag& d) : m_s(s), m_d(d) {}

    void run(json& doc);

  private:
    void load_nodes(json& doc);
    void check_node(const node_config& c, const std::string& p);
    void load_program(json& doc);
    void load_step(json& step, size_t index);
    void load_workloads(json& doc);
    void check_replay(json& w, const std::string& p);
    void load_trace(const json& v);
    json* top_array(json& doc, const std::string& key, const std::string& expected);

    // Checks `obj` against `shape` (keys in `skip` belong to the caller) and fills defaults.
    void check_shape(const field_shape& shape, json& obj, const std::string& ptr,
                     const std::vector<std::string>& skip);
    void check_value(const field_decl& f, json& v, const std::string& ptr);
    void check_ref(const field_decl& f, const json& v, const std::string& ptr);
    bool check_var(const json& v, const std::string& ptr);
    void check_names(const json& v, const std::vector<std::string>& names, bool any_case,
                     const std::string& what, const std::string& ptr);
    void check_expect(const std::string& op, const json& e, const std::string& ptr);
    void check_expected_value(const std::string& op, const std::string& key, const json& v,
                              const std::string& ptr, bool top);
    void check_save(const json& save, const std::string& ptr);

    bool has_node(const std::string& n) const { return m_s.node(n) != nullptr; }

    scenario& m_s;
    diag& m_d;
    std::string m_node;  // node of the step being checked
    std::map<std::string, std::map<std::string, resource_kind>> m_resources;
    std::vector<std::pair<std::string, resource_kind>> m_defined;  // by the current step
    std::set<std::string> m_vars;
};

}  // namespace scenario_check
}  // namespace hcasim
