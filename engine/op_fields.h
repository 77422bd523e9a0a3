// Builders for the op and workload tables' field declarations (engine/ops.cpp), and the field
// shapes several ops share (a scatter-gather element, a remote address, a send or receive work
// request, a data pattern). Internal to the engine: scenario files see only the tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops.h"

namespace hcasim::op_fields {

// A field of `kind`; req/opt are the required and optional forms (opt with its default).
field_decl f(std::string key, field_kind kind, bool required, std::string desc);
field_decl req(std::string key, field_kind kind, std::string desc);
field_decl opt(std::string key, field_kind kind, std::string desc, json def = nullptr);
field_decl with_default(field_decl d, json def);
// The op's `name` that defines a resource of kind `r`, and a field naming one.
field_decl define(resource_kind r, std::string desc);
field_decl ref(std::string key, resource_kind r, bool required, std::string desc);
field_decl choice(std::string key, std::vector<std::string> choices, bool required,
                  std::string desc, json def = nullptr);
field_decl integer(std::string key, double lo, double hi, bool required, std::string desc,
                   json def = nullptr);
field_decl real(std::string key, double lo, double hi, bool required, std::string desc,
                json def = nullptr);
// modify_qp's attributes (also create_qp's for the states it moves through).
std::vector<field_decl> qp_attribute_fields();
field_decl list(std::string key, field_decl item, bool required, std::string desc,
                size_t min_items = 0, size_t max_items = SIZE_MAX);
field_decl object(std::string key, const field_shape& shape, bool required, std::string desc);
field_decl access(bool required, std::string desc);
// The fields that say where the op's bytes are: `buf` and `offset`, or `va`.
void add_location(field_shape& s, const std::string& what);
const field_shape& sge_shape();
const field_shape& remote_shape();
field_decl sge_list();
const field_shape& send_wr_shape();
const field_shape& recv_wr_shape();
const field_shape& pattern_shape();
const field_shape& same_as_shape();
field_decl u64_list(std::string key, bool required, std::string desc);

}  // namespace hcasim::op_fields
